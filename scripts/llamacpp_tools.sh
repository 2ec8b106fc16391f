# Sourced by the scripts that link a user-built llama.cpp into Ladder's
# optional bench/llamacpp_* tools (bench/CMakeLists.txt).
#
# build_llamacpp_tools LLAMA_CPP_DIR BUILD_DIR TARGET...: configures BUILD_DIR
# with the llama.cpp of LLAMA_CPP_DIR (a source tree with shared libraries in
# build/bin; LLAMA_CPP_INCLUDE and LLAMA_CPP_LIBS, ';'-separated, for another
# layout) and builds ladder and the targets. Run from the repository root.
build_llamacpp_tools() {
  local llama=$1 build_dir=$2
  shift 2
  local include=${LLAMA_CPP_INCLUDE:-"$llama/include;$llama/ggml/include"}
  local libs=${LLAMA_CPP_LIBS:-"$llama/build/bin/libllama.so;$llama/build/bin/libggml.so;$llama/build/bin/libggml-base.so"}
  local include_dirs
  IFS=';' read -ra include_dirs <<<"$include"
  if [[ ! -f "${include_dirs[0]}/llama.h" ]]; then
    echo "error: no llama.h in ${include_dirs[0]} (set LLAMA_CPP_INCLUDE)" >&2
    return 2
  fi
  cmake -S . -B "$build_dir" -DLADDER_LLAMA_CPP_INCLUDE="$include" -DLADDER_LLAMA_CPP_LIBS="$libs" >/dev/null
  cmake --build "$build_dir" --target ladder "$@" -j "$(nproc)" >/dev/null
}
