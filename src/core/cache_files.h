// Where Lumen keeps what it measured on this machine (kernel choices, device costs), and the
// identity of this build, which every cached measurement is keyed by: a rebuilt or upgraded
// library measures again instead of trusting another build's numbers.
#pragma once

#include <string>
#include <string_view>

namespace lumen {

// $LUMEN_CACHE_DIR/<file> (default $XDG_CACHE_HOME/lumen, else ~/.cache/lumen); empty when no
// directory can be named (no HOME).
std::string cache_file_path(std::string_view file);

// "lumen 0.x build <size>-<mtime>" of the shared object holding this code.
std::string build_id();

}  // namespace lumen
