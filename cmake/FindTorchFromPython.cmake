# libtorch from a Python torch package: PyPI's wheel in .venv/ (see scripts/install-deps.sh) or
# the torch already installed on a GPU machine. The package says where its CMake files are
# (torch.utils.cmake_prefix_path) and which version it is; the version, and whether CUDA and
# NCCL are compiled in, go into the trainer as compile definitions for `transient --version`.
if(TRANSIENT_TORCH_PYTHON)
  execute_process(
    COMMAND ${TRANSIENT_TORCH_PYTHON} -c
            "import torch, torch.utils; print(torch.utils.cmake_prefix_path); print(torch.__version__)"
    OUTPUT_VARIABLE _torch_out ERROR_VARIABLE _torch_err RESULT_VARIABLE _torch_rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _torch_rc EQUAL 0)
    message(FATAL_ERROR "TRANSIENT_TORCH_PYTHON=${TRANSIENT_TORCH_PYTHON} cannot import torch "
                        "(${_torch_err}); accepted: a python3 with PyTorch 2.x installed "
                        "(make deps installs one into .venv/)")
  endif()
  string(REPLACE "\n" ";" _torch_lines "${_torch_out}")
  list(GET _torch_lines 0 _torch_prefix)
  list(GET _torch_lines 1 TRANSIENT_TORCH_PACKAGE_VERSION)
  list(PREPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
  message(STATUS "torch ${TRANSIENT_TORCH_PACKAGE_VERSION} from ${TRANSIENT_TORCH_PYTHON}")
endif()
find_package(Torch 2.0 REQUIRED)

# libtorch without its CUDA half: libtorch_cpu and c10, with torch's headers and flags. The
# `torch` target links libtorch.so, which needs libtorch_cuda and with it CUDA's libraries
# (about 350 MB and a seventh of a second more for every process); the trainer loads those only
# where they can run (src/transient/train/cuda_support.h).
add_library(transient_torch_cpu INTERFACE)
target_link_libraries(transient_torch_cpu INTERFACE torch_cpu_library)
target_include_directories(transient_torch_cpu SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
if(TORCH_CXX_FLAGS)
  separate_arguments(_torch_cxx_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  target_compile_options(transient_torch_cpu INTERFACE ${_torch_cxx_flags})
endif()
