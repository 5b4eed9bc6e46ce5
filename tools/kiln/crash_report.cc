#include "tools/kiln/crash_report.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace kiln::cli {

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// The handler may only call async-signal-safe functions: write(2), and
// backtrace_symbols_fd, which writes without allocating (backtrace() itself
// was called once at install so that its library is already loaded).
void write_text(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGFPE: return "SIGFPE (arithmetic fault)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGABRT: return "SIGABRT (abort)";
    default: return "a fault signal";
  }
}

void on_fault(int sig) {
  write_text("kiln: fatal signal ");
  write_text(signal_name(sig));
  write_text("; the stack, innermost first (library, function+offset):\n");
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  write_text("kiln: please report this with the command line and the lines above\n");
  // SA_RESETHAND restored the default action: raising again ends the
  // process as the signal would have (exit status 128 + sig, core dump).
  raise(sig);
}

}  // namespace

void install_crash_report() {
  static bool installed = false;
  if (installed || kSanitized) return;
  installed = true;
  void* warm[1];
  backtrace(warm, 1);
  // Its own stack, so that a stack overflow is reported too.
  static char alternate_stack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alternate_stack;
  ss.ss_size = sizeof alternate_stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa{};
  sa.sa_handler = on_fault;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  for (int sig : kSignals) sigaction(sig, &sa, nullptr);
}

}  // namespace kiln::cli
