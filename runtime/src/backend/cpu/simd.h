// Builds a hot function several times, for AVX-512, AVX2+FMA and baseline
// x86-64, and picks the best the CPU supports when the program loads: the
// kernels vectorise 8 or 16 wide without requiring a particular CPU.
// Not under ASan or TSan: the clone's resolver runs while the dynamic
// loader relocates the program, before the sanitizer's runtime is set up,
// and its instrumented code crashes there.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define LOUPE_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LOUPE_SIMD_CLONES
#endif
