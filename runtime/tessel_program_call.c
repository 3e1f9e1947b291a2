/* The entry a generated library's program functions call (codegen/ProgramFunctions.h): runs the
 * program and reports a failure through halide_error, so a caller sees it as any kernel's
 * failure (the library's error recorder, or Halide's handler). A file of its own: Tessel links
 * tessel_program.c without a Halide runtime, and only libraries, which carry one, call this. */
#include "tessel_runtime.h"

#include <HalideRuntime.h>

#define TESSEL_RT_API __attribute__((weak))

TESSEL_RT_API int tessel_program_call(const tessel_program *program, struct halide_buffer_t *const *buffers) {
    char error[512];
    if (tessel_program_run(program, buffers, error, sizeof error) == 0) return 0;
    halide_error(NULL, error);
    return halide_error_code_generic_error;
}
