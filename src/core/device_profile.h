// What the router knows of a device's speed and of the link to it, in the few numbers a roofline
// estimate needs. Measured by calibration micro-benchmarks (compile/cost_model.h) or, for a test
// device that stands in for another, declared by its backend.
#pragma once

namespace lumen {

struct DeviceProfile {
  double gflops = 0;        // dense math (GEMM, convolution), GFLOP/s
  double gbytes_per_s = 0;  // memory-bound ops: bytes read and written per second / 1e9
  double launch_us = 0;     // the fixed cost of one step, however small
};

// Copies between host memory and a device's memory.
struct LinkProfile {
  double gbytes_per_s = 0;
  double latency_us = 0;
};

}  // namespace lumen
