#include "support/c_library_names.h"

#include <set>

namespace spgen {

bool is_c_library_name(const std::string& name) {
  // C's <math.h> (each with its float and long double forms: expf, expl), then the other headers.
  static const std::set<std::string> math = {
      "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cos", "cosh", "erf", "erfc",
      "exp", "exp2", "expm1", "fabs", "fdim", "floor", "fma", "fmax", "fmin", "fmod", "frexp", "hypot", "ilogb", "ldexp",
      "lgamma", "llrint", "llround", "log", "log10", "log1p", "log2", "logb", "lrint", "lround", "modf", "nan", "nearbyint",
      "nextafter", "nexttoward", "pow", "remainder", "remquo", "rint", "round", "scalbln", "scalbn", "sin", "sinh", "sqrt",
      "tan", "tanh", "tgamma", "trunc", "signbit", "isnan", "isinf", "isfinite", "isnormal", "fpclassify", "j0", "j1", "jn",
      "y0", "y1", "yn", "gamma", "drem", "significand", "sincos", "exp10", "pow10"};
  static const std::set<std::string> others = {
      // <stdlib.h>
      "abort", "abs", "atexit", "atof", "atoi", "atol", "atoll", "bsearch", "calloc", "div", "exit", "free", "getenv",
      "labs", "ldiv", "llabs", "lldiv", "malloc", "mblen", "mbstowcs", "mbtowc", "qsort", "quick_exit", "rand", "realloc",
      "srand", "strtod", "strtof", "strtol", "strtold", "strtoll", "strtoul", "strtoull", "system", "wcstombs", "wctomb",
      "aligned_alloc", "posix_memalign", "random", "srandom", "setenv", "unsetenv", "putenv", "mkstemp", "realpath",
      // <string.h>
      "memchr", "memcmp", "memcpy", "memmove", "memset", "strcat", "strchr", "strcmp", "strcoll", "strcpy", "strcspn",
      "strerror", "strlen", "strncat", "strncmp", "strncpy", "strpbrk", "strrchr", "strspn", "strstr", "strtok", "strxfrm",
      "strdup", "strndup", "strnlen", "bzero", "bcopy", "index", "rindex",
      // <stdio.h>
      "clearerr", "fclose", "feof", "ferror", "fflush", "fgetc", "fgetpos", "fgets", "fopen", "fprintf", "fputc", "fputs",
      "fread", "freopen", "fscanf", "fseek", "fsetpos", "ftell", "fwrite", "getc", "getchar", "gets", "perror", "printf",
      "putc", "putchar", "puts", "remove", "rename", "rewind", "scanf", "setbuf", "setvbuf", "snprintf", "sprintf",
      "sscanf", "tmpfile", "tmpnam", "ungetc", "vfprintf", "vprintf", "vsnprintf", "vsprintf", "fileno", "popen", "pclose",
      // <time.h>, <signal.h>, <ctype.h>, <setjmp.h>, <unistd.h>
      "asctime", "clock", "ctime", "difftime", "gmtime", "localtime", "mktime", "strftime", "time", "raise", "signal",
      "isalnum", "isalpha", "isblank", "iscntrl", "isdigit", "isgraph", "islower", "isprint", "ispunct", "isspace",
      "isupper", "isxdigit", "tolower", "toupper", "longjmp", "setjmp", "read", "write", "close", "open", "sleep", "pipe",
      "fork", "dup", "link", "unlink", "sync", "kill", "wait", "select", "poll", "send", "recv", "socket", "connect",
      "bind", "listen", "accept"};
  if (others.count(name)) return true;
  if (name.rfind("omp_", 0) == 0) return true;
  if (math.count(name)) return true;
  // expf, expl, ...
  const char last = name.empty() ? '\0' : name.back();
  return (last == 'f' || last == 'l') && math.count(name.substr(0, name.size() - 1));
}

}  // namespace spgen
