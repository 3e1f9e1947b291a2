# tessel_add_test(NAME SOURCES src... LIBS lib... [INTEGRATION] [LABELS label...])
# Builds one doctest executable (main from tests/doctest_main.cpp) and registers it with CTest.
# Tiers: a test is `unit` (make check: quick, one concept, no whole-program builds) unless marked
# INTEGRATION (whole programs: JIT- or AOT-compiling graphs end to end, libraries, the tuner's
# children); make test runs both, and the fuzz and fuzz-smoke labels, and leaves out perf.
function(tessel_add_test name)
  cmake_parse_arguments(T "INTEGRATION" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE tessel_doctest_main ${T_LIBS})
  add_test(NAME ${name} COMMAND ${name})
  if(T_INTEGRATION)
    set(tier integration)
  else()
    set(tier unit)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${tier};${T_LABELS}")
endfunction()
