# transient_add_library(NAME SOURCES ... DEPS ...): one CMake library per part, includes rooted at src/.
function(transient_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# The python3 the tests run Python's torch with (exporting TorchScript files, torch.load of our
# checkpoints): the one the trainer was built against, else python3 on PATH.
if(TRANSIENT_TORCH_PYTHON)
  set(TRANSIENT_TEST_PYTHON "${TRANSIENT_TORCH_PYTHON}")
else()
  set(TRANSIENT_TEST_PYTHON "python3")
endif()

# Every test process and what it starts lets OpenMP's idle threads sleep (libtorch's intra-op
# threads, Python's torch): CTest runs four tests at a time on two cores, where a thread that spins
# waiting for a descheduled sibling burns the CPU the other tests need (docs/benchmarks.md,
# "OpenMP's spinning under CTest"). One variable: gtest_discover_tests splits a list.
set(TRANSIENT_TEST_ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE")

# transient_add_test(NAME SOURCES ... DEPS ... [GROUPED FILTER]): one GoogleTest binary per part,
# every test registered with CTest, each run in a process of its own; but the tests that
# GoogleTest's FILTER names (suites of millisecond unit tests in a binary whose every process
# starts libtorch, about 0.3 s of CPU) run together as one CTest test, NAME.Grouped.
# Tests find the shared data and the built CLI through compile definitions.
# -O1 in an optimised build, for code that only calls what does the work (the tests' own code,
# the command-line layer): the work is in the libraries, built at the build type's -O3.
set(TRANSIENT_LIGHT_OPTIMIZATION $<$<CONFIG:Release,RelWithDebInfo>:-O1>)

function(transient_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;GROUPED" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  # A test's own code at -O1 in an optimised build: what it tests is the libraries' code, built at
  # the build type's -O3; the tests' files, most of the build, compile in about a quarter less CPU
  # (docs/benchmarks.md, "The tests' own code at -O1").
  target_compile_options(${name} PRIVATE ${TRANSIENT_LIGHT_OPTIMIZATION})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} transient_test_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(${name} PRIVATE
    TRANSIENT_SHARED_DATA_DIR="${TRANSIENT_SHARED_DATA_DIR}"
    TRANSIENT_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    TRANSIENT_CLI_PATH="$<TARGET_FILE:transient>"
    TRANSIENT_PYTHON="${TRANSIENT_TEST_PYTHON}"
    # How the tests start it: without the huge pages `make test` gives libtorch's programs
    # (glibc.malloc.hugetlb=1), which cost Python's import of torch a fifth more CPU (1.57 s ->
    # 1.82 s; the reference networks' export 4.41 s -> 4.80 s).
    TRANSIENT_PYTHON_COMMAND="env -u GLIBC_TUNABLES ${TRANSIENT_TEST_PYTHON}")
  add_dependencies(${name} transient)
  if(ARG_GROUPED)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_FILTER "-${ARG_GROUPED}"
                         PROPERTIES TIMEOUT ${ARG_TIMEOUT}
                                    ENVIRONMENT "${TRANSIENT_TEST_ENVIRONMENT}")
    add_test(NAME ${name}.Grouped COMMAND ${name} --gtest_filter=${ARG_GROUPED})
    set_tests_properties(${name}.Grouped PROPERTIES TIMEOUT ${ARG_TIMEOUT}
                                                    ENVIRONMENT "${TRANSIENT_TEST_ENVIRONMENT}")
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT ${ARG_TIMEOUT}
                                                                 ENVIRONMENT "${TRANSIENT_TEST_ENVIRONMENT}")
  endif()
endfunction()
