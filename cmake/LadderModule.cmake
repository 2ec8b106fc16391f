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
  if(LADDER_SANITIZE AND name IN_LIST LADDER_SANITIZER_O1_MODULES)
    target_compile_options(ladder_${name} PRIVATE -O1)
  endif()
endfunction()

# ladder_test_suite(NAME DEPS dep...): every tests/NAME/*_test.cc becomes one
# GoogleTest binary ladder_NAME_tests, registered with CTest.
function(ladder_test_suite name)
  cmake_parse_arguments(ARG "" "" "DEPS;LABELS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.cc")
  if(NOT srcs)
    return()
  endif()
  add_executable(ladder_${name}_tests ${srcs})
  target_include_directories(ladder_${name}_tests PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_compile_options(ladder_${name}_tests PRIVATE ${LADDER_WARNINGS})
  target_link_libraries(ladder_${name}_tests PRIVATE ${ARG_DEPS} ladder_test_support GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(ladder_${name}_tests PRIVATE LADDER_TEST_SOURCE_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
  add_test(NAME ${name} COMMAND ladder_${name}_tests)
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "LADDER_BIN=$<TARGET_FILE:ladder>"
    LABELS "${name};${ARG_LABELS}")
endfunction()
