# Every dependency comes from Debian's packages (scripts/setup installs
# them); nothing is downloaded at build time.
find_package(Threads REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(tomlplusplus REQUIRED)
# The importers: simdjson (On-Demand) parses JSON traces, ISA-L (Debian's
# libisal-dev) inflates .json.gz. The tests write gzip files with zlib.
find_package(simdjson REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)

# The CPU device's matrix products (Debian's libopenblas-dev).
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)

find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
add_library(loupe_cli11 INTERFACE)
target_include_directories(loupe_cli11 SYSTEM INTERFACE ${CLI11_INCLUDE_DIR})

if(LOUPE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(LOUPE_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# The CUDA toolkit is optional: its presence is reported, never required.
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  message(STATUS "loupe: CUDA toolkit ${CUDAToolkit_VERSION} found at ${CUDAToolkit_LIBRARY_ROOT}")
else()
  message(STATUS "loupe: no CUDA toolkit found; building the CPU device only")
endif()

# NVTX3 ranges (header-only, from the CUDA toolkit) when present.
find_path(LOUPE_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include
  NO_DEFAULT_PATH)
if(LOUPE_NVTX_INCLUDE_DIR)
  message(STATUS "loupe: NVTX3 headers at ${LOUPE_NVTX_INCLUDE_DIR}: runtime phases emit NVTX ranges")
endif()
