// Element-wise binary ops with NumPy broadcasting: c[i] = op(a[ia], b[ib]) over the output's
// (collapsed, rank <= 6) shape, a broadcast dim having stride 0. b may hold integers (pow's
// exponent).
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push {
  uint n, op, rank, a_off, b_off, c_off;
  uint b_type;  // b's elements: 0 float32, 1 int32, 2 int64 (its low word), 3 uint32
  uint shape[6];
  uint a_stride[6];
  uint b_stride[6];
} p;

// x^y as std::pow, special cases included: x^0 and 1^y are 1 (NaN included), NaN otherwise
// gives NaN, infinite exponents and bases by their limits, a negative base only to an integer.
float power(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (isnan(x) || isnan(y)) return x + y;
  float ax = abs(x);
  if (isinf(y)) return ax == 1.0 ? 1.0 : ((ax > 1.0) == (y > 0.0) ? 1.0 / 0.0 : 0.0);
  bool odd = floor(y) == y && mod(y, 2.0) != 0.0;
  bool negative = (floatBitsToUint(x) >> 31) != 0u;  // -0.0 too
  if (isinf(x) || x == 0.0) {
    float m = (isinf(x) == (y > 0.0)) ? 1.0 / 0.0 : 0.0;
    return negative && odd ? -m : m;
  }
  if (negative && floor(y) != y) return uintBitsToFloat(0x7fc00000u);  // NaN
  float r = pow(ax, y);
  return negative && odd ? -r : r;
}

void main() {
  uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  uint ia = p.a_off, ib = p.b_off, r = i;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint k = r % p.shape[d];
    r /= p.shape[d];
    ia += k * p.a_stride[d];
    ib += k * p.b_stride[d];
  }
  float x = a[ia], y;
  switch (p.b_type) {
    case 0u: y = b[ib]; break;
    case 1u: y = float(floatBitsToInt(b[ib])); break;
    case 2u: y = float(floatBitsToInt(b[2u * ib])); break;
    default: y = float(floatBitsToUint(b[ib])); break;
  }
  float z;
  switch (p.op) {
    case 0: z = x + y; break;
    case 1: z = x - y; break;
    case 2: z = x * y; break;
    case 3: z = x / y; break;
    case 4: z = power(x, y); break;
    case 5: z = isnan(x) || isnan(y) ? x + y : max(x, y); break;
    default: z = isnan(x) || isnan(y) ? x + y : min(x, y); break;
  }
  c[p.c_off + i] = z;
}
