# Run at build time (cmake -P) by the ladder_build_revision target: writes
# OUT defining LADDER_GIT_REVISION as `git describe --always --dirty` of SRC
# ("unknown" outside a git checkout), rewriting it only when the revision
# changed so that nothing recompiles otherwise.
execute_process(
  COMMAND git -C "${SRC}" describe --always --dirty --abbrev=12
  OUTPUT_VARIABLE rev
  ERROR_QUIET
  OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR rev STREQUAL "")
  set(rev "unknown")
endif()
set(content "#define LADDER_GIT_REVISION \"${rev}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUT}" "${content}")
endif()
