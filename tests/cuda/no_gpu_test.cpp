// The CUDA device on a machine without a GPU (or driver): it says why,
// creating it fails with that reason, and the runtime carries on with the
// CPU device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "runtime/runtime_test_util.h"

namespace loupe::test {
namespace {

TEST(CudaNoGpu, SaysWhyAndTheCpuDeviceCarriesOn) {
  std::string why;
  if (rt::cuda_device_count(&why) > 0) GTEST_SKIP() << "a GPU is present: this checks the machines without one";
  EXPECT_FALSE(why.empty());
  try {
    rt::cuda(0);
    FAIL() << "cuda:0 was created without a GPU";
  } catch (const rt::RuntimeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("cuda:0 is not available: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
  }
  EXPECT_THROW(rt::zeros({4}, rt::f32, rt::Device{rt::DeviceType::cuda, 0}), rt::RuntimeError);
  const char* env = std::getenv("LOUPE_DEVICE");
  if (env == nullptr || std::strncmp(env, "cuda", 4) != 0) {
    EXPECT_EQ(rt::default_device(), rt::cpu(0));
  }
  Array x = rt::from_host(std::vector<float>{1, 2, 3}.data(), {3}, rt::f32, rt::cpu(0));
  EXPECT_EQ((x * 2.0).to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

}  // namespace
}  // namespace loupe::test
