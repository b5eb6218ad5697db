# Warnings and sanitizers for every redmux target: call redmux_target_options(target).
function(redmux_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  if(REDMUX_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(REDMUX_SANITIZE)
  # Sanitizer builds compile at -O1 with line tables only (-g1) instead of RelWithDebInfo's
  # -O2 -g: the optimisation level the sanitizers' documentation recommends, still enough
  # for file:line in every report, and 40-50 % less compile time (the largest test file:
  # 67 s -> 32 s under ASan+UBSan, 24 s -> 14 s under TSan), which is what lets .ci/run
  # build three configurations and run TSan over the integration tests within its budget.
  # Only when the build type's flags are CMake's default, so an explicit setting wins.
  if(CMAKE_CXX_FLAGS_RELWITHDEBINFO STREQUAL "-O2 -g -DNDEBUG")
    set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O1 -g1 -DNDEBUG")
  endif()
  add_compile_options(-fsanitize=${REDMUX_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${REDMUX_SANITIZE})
endif()
