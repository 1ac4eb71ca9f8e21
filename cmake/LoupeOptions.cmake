# Compiler warnings and sanitizers, applied to every loupe target through
# the interface library loupe_build_flags.
add_library(loupe_build_flags INTERFACE)
target_compile_options(loupe_build_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Wformat=2 -Wimplicit-fallthrough
  # Designated initializers leave defaulted members out on purpose.
  -Wno-missing-field-initializers
  # Call sites read "samples/x.cpp:12", not the absolute path of the checkout.
  -fmacro-prefix-map=${CMAKE_SOURCE_DIR}/=)
if(LOUPE_WERROR)
  target_compile_options(loupe_build_flags INTERFACE -Werror)
endif()
if(LOUPE_SANITIZE)
  target_compile_options(loupe_build_flags INTERFACE
    -fsanitize=${LOUPE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(loupe_build_flags INTERFACE -fsanitize=${LOUPE_SANITIZE})
endif()

# Fuzzing builds (scripts/fuzz): clang's libFuzzer coverage on every target;
# the fuzz programs themselves link -fsanitize=fuzzer.
option(LOUPE_FUZZ "Build the libFuzzer targets (needs clang)" OFF)
if(LOUPE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "LOUPE_FUZZ needs clang: configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  target_compile_options(loupe_build_flags INTERFACE -fsanitize=fuzzer-no-link)
endif()
