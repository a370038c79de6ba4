// A test device: it runs the CPU backend's kernels, but in a memory space of its own ("sim:0"),
// with a speed and a link to host memory that it declares instead of having them measured. With
// it, placement and copy insertion are tested deterministically on a machine with one real
// device: a fast simulated device draws the big GEMMs, a slow link keeps small ops on the CPU, and
// results must match single-device runs bit for bit (the same kernels run either way).
//
// Registered by register_simulated_device() (C++ tests) or, for a whole process, by the
// environment: LUMEN_SIMULATED_DEVICE="speed=8,bandwidth=2,latency=50[,launch=30,priority=50,
// slowdown=20]".
#pragma once

#include <string>

namespace lumen {

struct SimulatedDeviceOptions {
  double speed = 4;         // throughput as a multiple of the host CPU's measured profile
  double gbytes_per_s = 8;  // the link to host memory
  double latency_us = 20;   // per copy
  double launch_us = -1;    // per step; below 0: the host CPU's measured figure
  int priority = 50;        // below the CPU's 100: pinned-free ties go to the CPU
  // Its kernels take this many times as long as the CPU's they run (waiting out the rest): a
  // device slower than it declares, for tests of adaptive placement. 1: the CPU's own time.
  double slowdown = 1;
};

// Registers the backend "sim" (replacing one registered before) with these options.
void register_simulated_device(const SimulatedDeviceOptions &options);
// Takes it out of the registry again; nothing compiled for it may still run.
void unregister_simulated_device();

// Parses "speed=8,bandwidth=2,latency=50,launch=30,priority=50,slowdown=20" (any subset); throws
// naming a bad field.
SimulatedDeviceOptions parse_simulated_device_options(const std::string &spec);

}  // namespace lumen
