# Run by CTest (see CMakeLists.txt next to this file) with -P. Every step that fails stops
# the test with the command's output.
cmake_minimum_required(VERSION 3.25)

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${step} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

run("cmake --install (is the whole project built?)"
  ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(path include/redmux/version.hpp include/redmux/error.hpp
    ${LIBDIR}/libredmux.a ${LIBDIR}/libredmux.so ${LIBDIR}/pkgconfig/redmux.pc
    ${LIBDIR}/cmake/redmux/redmuxConfig.cmake ${LIBDIR}/cmake/redmux/redmuxConfigVersion.cmake)
  if(NOT EXISTS ${prefix}/${path})
    message(FATAL_ERROR "install test: ${path} not installed under ${prefix}")
  endif()
endforeach()

# 1. CMake package.
run("configure consumer" ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
  -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run("build consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
foreach(exe redmux_consumer redmux_consumer_shared)
  run("run ${exe}" ${WORK_DIR}/build/${exe})
  if(NOT run_output MATCHES "redmux ${EXPECTED_VERSION}: ")
    message(FATAL_ERROR "install test: ${exe} printed unexpected output:\n${run_output}")
  endif()
  message(STATUS "${exe}: ${run_output}")
endforeach()

# 2. pkg-config, relocated: the .pc file finds its prefix from its own location.
set(ENV{PKG_CONFIG_PATH} ${prefix}/${LIBDIR}/pkgconfig)
run("pkg-config --modversion" pkg-config --modversion redmux)
string(STRIP "${run_output}" version)
if(NOT version STREQUAL EXPECTED_VERSION)
  message(FATAL_ERROR "install test: pkg-config reports version '${version}', expected ${EXPECTED_VERSION}")
endif()
run("pkg-config --cflags --libs" pkg-config --cflags --libs redmux)
string(STRIP "${run_output}" flags)
message(STATUS "pkg-config --cflags --libs redmux: ${flags}")
separate_arguments(flag_list UNIX_COMMAND "${flags}")
file(REAL_PATH ${prefix} real_prefix)
set(found_include FALSE)
set(found_lib FALSE)
foreach(flag IN LISTS flag_list)
  if(flag MATCHES "^-I(.+)$")
    file(REAL_PATH ${CMAKE_MATCH_1} dir)
    if(dir STREQUAL "${real_prefix}/include")
      set(found_include TRUE)
    endif()
  elseif(flag MATCHES "^-L(.+)$")
    file(REAL_PATH ${CMAKE_MATCH_1} dir)
    if(dir STREQUAL "${real_prefix}/${LIBDIR}")
      set(found_lib TRUE)
    endif()
  endif()
endforeach()
if(NOT found_include OR NOT found_lib)
  message(FATAL_ERROR "install test: pkg-config flags do not point into ${prefix}: ${flags}")
endif()
# As the README and getting-started.md say: the shared library, found through -rpath (no
# LD_LIBRARY_PATH: the prefix is one the loader does not search).
run("pkg-config --variable=libdir" pkg-config --variable=libdir redmux)
string(STRIP "${run_output}" pc_libdir)
run("compile with pkg-config flags"
  ${CXX} ${CONSUMER_DIR}/main.cpp -o ${WORK_DIR}/consumer_pkgconfig ${flag_list}
  -Wl,-rpath,${pc_libdir})
unset(ENV{LD_LIBRARY_PATH})
run("run consumer built with pkg-config flags" ${WORK_DIR}/consumer_pkgconfig)
if(NOT run_output MATCHES "redmux ${EXPECTED_VERSION}: ")
  message(FATAL_ERROR "install test: pkg-config consumer printed unexpected output:\n${run_output}")
endif()
message(STATUS "install test passed: ${prefix}")

# 3. The Bookstore example built on its own against the prefix, as docs/bookstore.md shows
# (skipped, as its CMakeLists says, without cpp-httplib and nlohmann-json).
run("configure the bookstore example" ${CMAKE_COMMAND} -S ${BOOKSTORE_DIR}
  -B ${WORK_DIR}/bookstore -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX}
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
if(run_output MATCHES "bookstore example: skipped")
  message(STATUS "bookstore example: skipped (no cpp-httplib or nlohmann-json here)")
else()
  run("build the bookstore example" ${CMAKE_COMMAND} --build ${WORK_DIR}/bookstore)
  run("run bookstore --help" ${WORK_DIR}/bookstore/bookstore --help)
  if(NOT run_output MATCHES "^usage: bookstore ")
    message(FATAL_ERROR "install test: bookstore --help printed:\n${run_output}")
  endif()
  message(STATUS "bookstore example built against the prefix: ${run_output}")
endif()
