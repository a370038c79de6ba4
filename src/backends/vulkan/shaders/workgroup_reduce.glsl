// Reductions over a workgroup of 256 invocations, each invocation getting the result: op 0 sum,
// 2 max, 3 min (NaN propagating, as the reference), 4 product. Compiled with LUMEN_SUBGROUPS (a
// shader's _subgroup variant, run where the device has subgroup arithmetic and vote in compute
// shaders and subgroups of 4 or more: VulkanDevice::subgroup_reductions), each subgroup reduces
// with subgroup operations and the subgroups' results combine through shared memory; without, a
// tree in shared memory. Include it first, before any declaration (it enables extensions).
#ifdef LUMEN_SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#endif

float combine(float a, float b, uint op) {
  if (op == 2u) return isnan(a) || isnan(b) ? a + b : max(a, b);
  if (op == 3u) return isnan(a) || isnan(b) ? a + b : min(a, b);
  if (op == 4u) return a * b;
  return a + b;
}

#ifdef LUMEN_SUBGROUPS
shared float reduce_partials[64];  // one per subgroup

float workgroup_reduce(float v, uint op) {
  float r;
  if (op == 2u || op == 3u) {
    // subgroupMax and subgroupMin leave NaN undefined: a NaN anywhere in the subgroup wins.
    bool nan = subgroupAny(isnan(v));
    r = op == 2u ? subgroupMax(v) : subgroupMin(v);
    if (nan) r = uintBitsToFloat(0x7fc00000u);
  } else {
    r = op == 4u ? subgroupMul(v) : subgroupAdd(v);
  }
  if (subgroupElect()) reduce_partials[gl_SubgroupID] = r;
  barrier();
  r = reduce_partials[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i) r = combine(r, reduce_partials[i], op);
  barrier();
  return r;
}
#else
shared float reduce_partials[256];

float workgroup_reduce(float v, uint op) {
  uint t = gl_LocalInvocationID.x;
  reduce_partials[t] = v;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) {
    if (t < s) reduce_partials[t] = combine(reduce_partials[t], reduce_partials[t + s], op);
    barrier();
  }
  float r = reduce_partials[0];
  barrier();
  return r;
}
#endif
