// 2-D max or average pooling (mode 0: max, 1: average), one invocation per output element over
// planes = N*C; padding is skipped by max and counted by average only with count_include_pad
// (and not past the end padding, where ceil_mode adds windows).
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint planes, H, W, OH, OW, KH, KW, sh, sw, ph, pw, ph_end, pw_end, dh, dw, mode, count_include_pad;
  uint x_off, y_off;
} p;

void main() {
  uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
  if (i >= p.planes * p.OH * p.OW) return;
  uint ow = i % p.OW, oh = (i / p.OW) % p.OH, plane = i / (p.OW * p.OH);
  uint base = p.x_off + plane * p.H * p.W;
  float acc = p.mode == 0u ? -1.0 / 0.0 : 0.0;
  uint count = 0;
  for (uint kh = 0; kh < p.KH; ++kh) {
    int ih = int(oh * p.sh + kh * p.dh) - int(p.ph);
    for (uint kw = 0; kw < p.KW; ++kw) {
      int iw = int(ow * p.sw + kw * p.dw) - int(p.pw);
      bool inside = ih >= 0 && ih < int(p.H) && iw >= 0 && iw < int(p.W);
      if (inside) {
        float v = x[base + uint(ih) * p.W + uint(iw)];
        acc = p.mode == 0u ? (isnan(v) ? v : max(acc, v)) : acc + v;
        ++count;
      } else if (p.count_include_pad != 0u && ih < int(p.H + p.ph_end) && iw < int(p.W + p.pw_end)) {
        ++count;
      }
    }
  }
  y[p.y_off + i] = p.mode == 0u ? acc : (count > 0u ? acc / float(count) : 0.0);
}
