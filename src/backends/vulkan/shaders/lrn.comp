// Local response normalization across channels: y = x / (bias + alpha / size * sum of x^2 over
// the channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta, one invocation per element.
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint n, C, plane, size, x_off, y_off;
  float alpha, beta, bias;
} p;

void main() {
  uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  uint s = i % p.plane, c = (i / p.plane) % p.C, batch = i / (p.plane * p.C);
  int lo = max(0, int(c) - int((p.size - 1u) / 2u));
  int hi = min(int(p.C) - 1, int(c) + int(p.size / 2u));
  float sum = 0.0;
  for (int k = lo; k <= hi; ++k) {
    float v = x[p.x_off + (batch * p.C + uint(k)) * p.plane + s];
    sum += v * v;
  }
  y[p.y_off + i] = x[p.x_off + i] / pow(p.bias + p.alpha / float(p.size) * sum, p.beta);
}
