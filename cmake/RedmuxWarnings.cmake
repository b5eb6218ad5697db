# Warnings and sanitizers for every redmux target: call redmux_target_options(target).
function(redmux_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  if(REDMUX_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(REDMUX_SANITIZE)
  add_compile_options(-fsanitize=${REDMUX_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${REDMUX_SANITIZE})
endif()
