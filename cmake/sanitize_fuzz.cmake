# Sanitizer and fuzzing builds (docs/fuzzing.md). Included by the top CMakeLists.txt before any
# library, so every object of such a build is instrumented alike.
option(DRIFTSCOPE_SANITIZE
       "Build everything with AddressSanitizer + UndefinedBehaviorSanitizer (no CUDA)" OFF)
option(DRIFTSCOPE_FUZZ
       "Build the libFuzzer targets of tests/fuzz (clang; adds coverage instrumentation to all code)"
       OFF)

if(DRIFTSCOPE_SANITIZE)
  if(DRIFTSCOPE_CUDA)
    message(FATAL_ERROR "DRIFTSCOPE_SANITIZE=ON needs -DDRIFTSCOPE_CUDA=OFF (nvcc objects are not instrumented)")
  endif()
  # Any report is fatal (no recovery), so a finding fails the test that triggered it.
  add_compile_options(
    "$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined;-fno-sanitize-recover=all;-fno-omit-frame-pointer>")
  add_link_options(-fsanitize=address,undefined)
endif()

if(DRIFTSCOPE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "DRIFTSCOPE_FUZZ=ON needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  # Coverage feedback for libFuzzer in every library; only the fuzz_* executables link the
  # libFuzzer runtime (-fsanitize=fuzzer, tests/fuzz/CMakeLists.txt). The sanitizer runtime
  # supplies the coverage callbacks to everything else, so the test suite links as usual.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>")
endif()
