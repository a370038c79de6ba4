// Softmax (or log-softmax) along one axis of a tensor seen as [outer, len, inner]: one
// workgroup per (outer, inner) row, reducing its max and sum in shared memory.
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint rows, len, inner, x_off, y_off, log_softmax;
} p;

shared float partial[256];

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.rows) return;
  uint t = gl_LocalInvocationID.x;
  uint base = (row / p.inner) * p.len * p.inner + row % p.inner;
  float m = -1.0 / 0.0;
  for (uint k = t; k < p.len; k += 256) m = max(m, x[p.x_off + base + k * p.inner]);
  partial[t] = m;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) partial[t] = max(partial[t], partial[t + s]);
    barrier();
  }
  m = partial[0];
  barrier();
  float sum = 0.0;
  for (uint k = t; k < p.len; k += 256) sum += exp(x[p.x_off + base + k * p.inner] - m);
  partial[t] = sum;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    barrier();
  }
  sum = partial[0];
  for (uint k = t; k < p.len; k += 256) {
    float v = x[p.x_off + base + k * p.inner] - m;
    y[p.y_off + base + k * p.inner] = p.log_softmax != 0u ? v - log(sum) : exp(v) / sum;
  }
}
