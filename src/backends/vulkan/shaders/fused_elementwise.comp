// A chain of element-wise steps in one pass (the fused_elementwise op): per element, the running
// value starts from slot 1 (input 0) or, for a later piece of a long chain, from y, then each
// step applies an activation (activations.glsl) or a binary op with the value in an operand slot,
// and y gets the result. Slots 1..6 are inputs, each either the output's shape or one element.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer X1 { float x1[]; };
layout(std430, binding = 2) readonly buffer X2 { float x2[]; };
layout(std430, binding = 3) readonly buffer X3 { float x3[]; };
layout(std430, binding = 4) readonly buffer X4 { float x4[]; };
layout(std430, binding = 5) readonly buffer X5 { float x5[]; };
layout(std430, binding = 6) readonly buffer X6 { float x6[]; };
layout(push_constant) uniform Push {
  uint n, y_off;
  // bits 0-3: steps (<= 12); bit 4: the running value starts from y; bits 8-13: slot k (1..6)
  // holds one element when bit 7 + k is set.
  uint meta;
  uint off[6];    // slot k's element offset at off[k - 1]
  uint steps[6];  // two steps per word, 16 bits each: bits 0-5 code (below 32: an activation;
                  // 32 + add sub mul div max min), bits 6-8 operand slot, bit 9 running value
                  // on the right, bits 10-13 index of its parameters (alpha, beta) in params
  float params[16];
} p;

float load(uint slot, uint i) {
  uint at = p.off[slot - 1u] + (((p.meta >> (7u + slot)) & 1u) != 0u ? 0u : i);
  switch (slot) {
    case 1: return x1[at];
    case 2: return x2[at];
    case 3: return x3[at];
    case 4: return x4[at];
    case 5: return x5[at];
    default: return x6[at];
  }
}

float binary_op(uint op, float a, float b) {
  switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return isnan(a) || isnan(b) ? a + b : max(a, b);
    default: return isnan(a) || isnan(b) ? a + b : min(a, b);
  }
}

void main() {
  uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  float v = (p.meta & 16u) != 0u ? y[p.y_off + i] : load(1u, i);
  uint count = p.meta & 15u;
  for (uint s = 0u; s < count; ++s) {
    uint step = (p.steps[s / 2u] >> (16u * (s % 2u))) & 0xffffu;
    uint code = step & 63u, slot = (step >> 6) & 7u, at = (step >> 10) & 15u;
    if (code < 32u) {
      v = activate(code, v, p.params[at], p.params[min(at + 1u, 15u)]);
    } else {
      float o = load(slot, i);
      v = (step & 512u) != 0u ? binary_op(code - 32u, o, v) : binary_op(code - 32u, v, o);
    }
  }
  y[p.y_off + i] = v;
}
