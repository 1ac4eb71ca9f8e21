// The message a user would read when a call fails: what the tests compare
// with the words they expect.
#pragma once

#include <string>

namespace loupe::test {

// The message of the `Error` that `call()` throws, or "" when it returns.
template <typename Error, typename Call>
std::string error_message(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace loupe::test
