# Installs headers, libredmux (static and shared), the CMake package (find_package(redmux
# CONFIG) → redmux::redmux, static; redmux::shared) and redmux.pc.
include(CMakePackageConfigHelpers)

# Consumers of the installed targets compile with C++20 without having to ask for it.
target_compile_features(redmux_static PUBLIC cxx_std_20)
target_compile_features(redmux_shared PUBLIC cxx_std_20)

set_target_properties(redmux_static PROPERTIES EXPORT_NAME redmux)
set_target_properties(redmux_shared PROPERTIES EXPORT_NAME shared)
install(TARGETS redmux_static redmux_shared EXPORT redmuxTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/redmux DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(REDMUX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/redmux)
install(EXPORT redmuxTargets NAMESPACE redmux:: DESTINATION ${REDMUX_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/redmuxConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/redmuxConfig.cmake INSTALL_DESTINATION ${REDMUX_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/redmuxConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/redmuxConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/redmuxConfigVersion.cmake DESTINATION ${REDMUX_CMAKE_DIR})

list(TRANSFORM REDMUX_ASIO_DEFINITIONS PREPEND "-D" OUTPUT_VARIABLE _asio_flags)
list(JOIN _asio_flags " " REDMUX_PC_CFLAGS)
if(REDMUX_WITH_TLS)
  set(REDMUX_PC_REQUIRES "libssl libcrypto")
  string(APPEND REDMUX_PC_CFLAGS " -DREDMUX_WITH_TLS=1")
endif()
# redmux.pc is relocatable: its prefix is computed from where the file lies (${pcfiledir}),
# so `cmake --install --prefix X` and packaging into a staging dir give a working file.
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(REDMUX_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(REDMUX_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(REDMUX_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _up "/_/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/_")
  string(REGEX REPLACE "/$" "" _up "${_up}")
  set(REDMUX_PC_PREFIX "\${pcfiledir}/${_up}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/redmux.pc.in ${CMAKE_CURRENT_BINARY_DIR}/redmux.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/redmux.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
