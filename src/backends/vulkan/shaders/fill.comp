// Fills a tensor with one value of 1 or 2 words (32- or 64-bit elements).
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Out { uint dst[]; };
layout(push_constant) uniform Push {
  uint n, off, words, lo, hi;  // n words from word offset off; an element is `words` words
} p;

void main() {
  uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  dst[p.off + i] = p.words == 2u && (i & 1u) == 1u ? p.hi : p.lo;
}
