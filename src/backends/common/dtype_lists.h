// Dtype lists for kernel registrations whose kernels move bytes (or read shapes) and never look
// at values, so they serve every standard dtype.
#pragma once

#include "lumen/dtype.h"

#define LUMEN_ALL_DTYPES                                                                           \
  ::lumen::DType::Float32, ::lumen::DType::Float16, ::lumen::DType::BFloat16,                      \
      ::lumen::DType::Float64, ::lumen::DType::Int8, ::lumen::DType::Int16, ::lumen::DType::Int32, \
      ::lumen::DType::Int64, ::lumen::DType::UInt8, ::lumen::DType::Bool, ::lumen::DType::UInt16,  \
      ::lumen::DType::UInt32, ::lumen::DType::UInt64
