# ladder_unity(TARGET): compiles TARGET's sources in batches of
# LADDER_UNITY_BATCH files (16: a clean Release build in 5 minutes on 2
# cores, against 11.5 one file at a time) (one translation unit each), so that the Boost,
# nlohmann-json and GoogleTest headers most files include are parsed once per
# batch rather than once per file. A source that includes Highway's
# foreach_target.h re-includes itself and must stay alone: it is marked
# SKIP_UNITY_BUILD_INCLUSION. LADDER_UNITY_BATCH=0 turns batching off.
set(LADDER_UNITY_BATCH 16 CACHE STRING "Source files per unity translation unit (0: no unity build)")
function(ladder_unity target)
  if(NOT LADDER_UNITY_BATCH)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${LADDER_UNITY_BATCH})
  # GCC warns when a class with external linkage holds a type from an
  # anonymous namespace outside the main file: in a unity unit every .cc is
  # outside it, so the warning would fire on what is, per file, correct.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
  get_target_property(srcs ${target} SOURCES)
  foreach(src IN LISTS srcs)
    file(STRINGS "${src}" alone REGEX "foreach_target\\.h")
    if(alone)
      set_source_files_properties("${src}" TARGET_DIRECTORY ${target} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
endfunction()

# Glue: the modules of HTTP, JSON and orchestration, the `ladder`
# executable's commands and the test suites, as against the modules whose
# loops serving's speed hinges on and that parse untrusted bytes (kernels,
# model, KV, engine, GGUF, tokenizer, grammar, templates). ladder_glue(TARGET
# LEVEL) compiles a glue target
#  - in Release at LEVEL instead of -O3: -O2 for modules and the executable,
#    whose time goes to I/O and allocation rather than loops (the server's
#    unity unit compiles 23% faster), -O0 for test suites (their code is
#    fixtures, clients and assertions; a suite runs at the speed of the
#    modules it calls: the server's and the harness's units compile in
#    20-23 s against 31-37 s at -O1), -O1 for those marked
#    OPTIMIZE_TEST_CODE, whose own code computes (reference kernels, fuzz
#    and property loops: at -O0 the grammar suite ran 3x longer);
#  - under ASan/UBSan without UBSan's null and alignment checks: they are
#    most of UBSan's compile time (the server's unity unit: 52 s with them,
#    39 s without, 36 s ASan alone) and here instrument mostly Boost's and
#    nlohmann-json's templates. The other modules keep every check, and a
#    null dereference anywhere is still reported (ASan's SEGV report).
set(LADDER_GLUE_MODULES net server harness ladder route)
function(ladder_glue target level)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:${level}>)
  if(LADDER_SANITIZE STREQUAL "address" OR LADDER_SANITIZE STREQUAL "ON")
    target_compile_options(${target} PRIVATE -fno-sanitize=null,alignment)
  endif()
endfunction()

# ladder_module(NAME DEPS dep...): builds src/NAME/**/*.cc into the static
# library ladder_NAME. Sources are globbed so that adding a file needs no edit
# here; re-run cmake (make build does) after adding one.
function(ladder_module name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*.cc")
  add_library(ladder_${name} STATIC ${srcs})
  target_include_directories(ladder_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(ladder_${name} PRIVATE ${LADDER_WARNINGS})
  target_link_libraries(ladder_${name} PUBLIC ${ARG_DEPS})
  ladder_unity(ladder_${name})
  if(LADDER_SANITIZE AND name IN_LIST LADDER_SANITIZER_O1_MODULES)
    target_compile_options(ladder_${name} PRIVATE -O1)
  endif()
  if(name IN_LIST LADDER_GLUE_MODULES)
    ladder_glue(ladder_${name} -O2)
  endif()
endfunction()

# ladder_test_suite(NAME DEPS dep... [OPTIMIZE_TEST_CODE]
# [COST SECONDS] [SANITIZED_COST SECONDS] [PARTS FILTER...]): every
# tests/NAME/*_test.cc becomes one GoogleTest binary ladder_NAME_tests,
# registered with CTest.
# OPTIMIZE_TEST_CODE: see ladder_glue. COST and
# SANITIZED_COST: about how long the suite runs in the Release build and in
# the slower sanitizer build, so that `ctest -j` starts the long ones first
# instead of leaving one to run alone at the end (a fresh build has no
# measured times yet); with PARTS, each entry's.
# PARTS: in the Release build the binary is registered once per GoogleTest
# filter, NAME/1, NAME/2, ... (the tests the filter matches that no earlier
# one did), plus NAME for the tests none matched, all labelled NAME: a suite
# whose long tests wait on the clock then runs them side by side instead of
# one after another at the end of `ctest -j`. A filter keeps together the tests
# that share a process-wide fixture (it would run once per entry otherwise).
# The sanitizer builds register the suite whole: the Makefile hands their
# exclusions to GoogleTest in GTEST_FILTER, which a --gtest_filter overrides.
function(ladder_test_suite name)
  cmake_parse_arguments(ARG "OPTIMIZE_TEST_CODE" "COST;SANITIZED_COST" "DEPS;LABELS;PARTS" ${ARGN})
  if(LADDER_SANITIZE AND ARG_SANITIZED_COST)
    set(ARG_COST ${ARG_SANITIZED_COST})
  endif()
  file(GLOB srcs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.cc")
  if(NOT srcs)
    return()
  endif()
  add_executable(ladder_${name}_tests ${srcs})
  target_include_directories(ladder_${name}_tests PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_compile_options(ladder_${name}_tests PRIVATE ${LADDER_WARNINGS})
  target_link_libraries(ladder_${name}_tests PRIVATE ${ARG_DEPS} ladder_test_support GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(ladder_${name}_tests PRIVATE LADDER_TEST_SOURCE_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
  ladder_unity(ladder_${name}_tests)
  if(ARG_OPTIMIZE_TEST_CODE)
    ladder_glue(ladder_${name}_tests -O1)
  else()
    ladder_glue(ladder_${name}_tests -O0)
  endif()
  set(entries ${name})
  if(ARG_PARTS AND NOT LADDER_SANITIZE)
    set(taken "")
    set(i 0)
    foreach(filter IN LISTS ARG_PARTS)
      math(EXPR i "${i} + 1")
      if(taken)
        add_test(NAME ${name}/${i} COMMAND ladder_${name}_tests "--gtest_filter=${filter}-${taken}")
        string(APPEND taken ":${filter}")
      else()
        add_test(NAME ${name}/${i} COMMAND ladder_${name}_tests "--gtest_filter=${filter}")
        set(taken "${filter}")
      endif()
      list(APPEND entries ${name}/${i})
    endforeach()
    add_test(NAME ${name} COMMAND ladder_${name}_tests "--gtest_filter=-${taken}")
  else()
    add_test(NAME ${name} COMMAND ladder_${name}_tests)
  endif()
  set_tests_properties(${entries} PROPERTIES
    ENVIRONMENT "LADDER_BIN=$<TARGET_FILE:ladder>"
    LABELS "${name};${ARG_LABELS}")
  if(ARG_COST)
    set_tests_properties(${entries} PROPERTIES COST ${ARG_COST})
  endif()
endfunction()
