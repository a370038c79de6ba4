// Gather along one axis of data seen as [outer, axis_len, inner]: out[o, j, :] = data[o, idx[j],
// :], moving 32-bit words (an element is inner's share of them). Indices are int32 or int64 (the
// low word; the host checked every index is in [-axis_len, axis_len)); negative ones count from
// the end.
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer D { uint data[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) writeonly buffer O { uint dst[]; };
layout(push_constant) uniform Push {
  uint n, inner_words, n_idx, axis_len, d_off, i_off, o_off, idx_words;
} p;

void main() {
  uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  uint w = i % p.inner_words, rest = i / p.inner_words;
  uint j = rest % p.n_idx, o = rest / p.n_idx;
  int k = idx[p.i_off + j * p.idx_words];
  if (k < 0) k += int(p.axis_len);
  dst[p.o_off + i] = data[p.d_off + (o * p.axis_len + uint(k)) * p.inner_words + w];
}
