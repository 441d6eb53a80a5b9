// The main of every test program: GoogleTest's, except that the process ends with _Exit once the
// tests have run and what they printed is flushed. The train tests link libtorch, whose static
// destructors (its operator registry unregistering every kernel) took a third of a short
// process's CPU, and CTest starts one process per test (docs/benchmarks.md, "Ending a torch
// process without libtorch's static destructors").
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int code = RUN_ALL_TESTS();
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}
