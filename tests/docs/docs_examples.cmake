# Run by CTest with -P (see CMakeLists.txt beside this file): the C++ blocks of README.md and
# docs/*.md, compiled against the installed package. A compiler error names the page and the
# line of the block (extract_examples writes #line directives).
cmake_minimum_required(VERSION 3.25)

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "docs examples: ${step} failed (${rc}):\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(blocks ${WORK_DIR}/blocks)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

run("cmake --install (is the whole project built?)"
  ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
run("extracting the blocks" ${EXTRACT} ${SOURCE_DIR} ${blocks})
message(STATUS "blocks found:\n${run_output}")

set(ENV{PKG_CONFIG_PATH} ${prefix}/${LIBDIR}/pkgconfig)
run("pkg-config --cflags --libs" pkg-config --cflags --libs redmux)
string(STRIP "${run_output}" flags)
separate_arguments(flag_list UNIX_COMMAND "${flags}")

# Fragments only need to compile: syntax and types, templates instantiated.
run("compiling the fragments (fragments.cpp)"
  ${CXX} -fsyntax-only -Wall -Wno-unused-variable -Wno-unused-but-set-variable
  ${blocks}/fragments.cpp ${flag_list})
# Whole programs (with a main) also link against the library (they are not run: they need a
# server); translation units without one are compiled.
file(GLOB programs ${blocks}/program_*.cpp)
foreach(program IN LISTS programs)
  get_filename_component(name ${program} NAME_WE)
  file(READ ${program} text)
  string(FIND "${text}" "int main(" has_main)
  if(has_main EQUAL -1)
    run("compiling ${name}.cpp" ${CXX} -c ${program} -o ${WORK_DIR}/${name}.o ${flag_list})
  else()
    run("compiling and linking ${name}.cpp" ${CXX} ${program} -o ${WORK_DIR}/${name} ${flag_list})
  endif()
endforeach()
list(LENGTH programs count)
message(STATUS "docs examples passed: fragments.cpp and ${count} programs")
