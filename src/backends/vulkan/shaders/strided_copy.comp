// Copies a region of up to 6 dims from one strided layout to another: out[out_off + sum k_d *
// out_stride_d] = in[in_off + sum k_d * in_stride_d]. Transpose, slice, concat (one dispatch per
// input), split, expand and every reshape-like op are this copy. 32-bit words: float32 and int32.
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer In { uint src[]; };
layout(std430, binding = 1) writeonly buffer Out { uint dst[]; };
layout(push_constant) uniform Push {
  uint n, rank, in_off, out_off;
  uint shape[6];
  uint in_stride[6];
  uint out_stride[6];
} p;

void main() {
  uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  uint si = p.in_off, di = p.out_off, r = i;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint k = r % p.shape[d];
    r /= p.shape[d];
    si += k * p.in_stride[d];
    di += k * p.out_stride[d];
  }
  dst[di] = src[si];
}
