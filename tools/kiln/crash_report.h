// What the kiln tool says when it dies of a fault signal (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL, SIGABRT): the signal and the stack, innermost first, on
// stderr, then the default action (the same exit status, a core where the
// machine keeps them). Drivers and plugins fault in ways a user can only
// report: the stack names the library and function that did.
#pragma once

namespace kiln::cli {

// Installs the handlers (once; later calls do nothing). Not in sanitizer
// builds, whose own reports say more.
void install_crash_report();

}  // namespace kiln::cli
