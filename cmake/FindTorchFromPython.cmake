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
