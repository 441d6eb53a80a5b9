// libtorch's CUDA half (libtorch_cuda and the CUDA libraries under it: about 350 MB of memory and
// a seventh of a second of CPU for every process that maps them) is loaded only where it can run:
// on a machine with an NVIDIA driver, at the start of every process of the trainer, and by
// `transient --version`, which reports it. Elsewhere workers, coordinators and launchers run on
// libtorch_cpu alone. It comes in through libtransient_cuda.so (cuda_module.h), built beside the
// program when the torch built against has CUDA.
//
// Torch-free header. Thread-safe.
#pragma once

#include <string>

namespace transient::train {

// Whether the torch this was built against has CUDA compiled in.
bool cuda_compiled_in();

// Whether this machine has an NVIDIA driver: its control device /dev/nvidiactl (also inside
// containers given GPUs), or WSL's /dev/dxg.
bool nvidia_driver_present();

// Loads the CUDA half once; later calls give the first answer. False, with the reason in
// *why_not, when CUDA is not compiled in or the module does not load.
bool load_cuda(std::string* why_not = nullptr);

// Loads it if nvidia_driver_present(). A torch program calls this first: libtorch settles
// whether it has CUDA at its first question and keeps the answer.
void load_cuda_where_it_can_run();

// The CUDA GPUs this process can train on: 0 where CUDA is not compiled in, the machine has no
// NVIDIA driver, CUDA's libraries do not load or no GPU answers; *why_none then says which, in
// words that end a sentence beginning "no GPU: ".
int usable_gpus(std::string* why_none = nullptr);

// usable_gpus(), or InputError for `--device cuda` naming why there is none (the one refusal of
// the launcher, which starts workers here, and of a worker).
int require_usable_gpus();

// The module's own file (beside the running program, else where the build made it).
std::string cuda_module_path();

}  // namespace transient::train
