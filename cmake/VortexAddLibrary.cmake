# vortex_add_library(name sources... [DEPENDS targets] [LINK_LIBS libs])
#
# A static, position-independent library linked against libMLIR.so. The
# libraries are installed and exported for `find_package(Vortex)`.
function(vortex_add_library name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;LINK_LIBS" ${ARGN})
  add_library(${name} STATIC ${ARG_UNPARSED_ARGUMENTS})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_LINK_LIBS} ${VORTEX_MLIR_LINK})
  # MLIR's headers need C++17: so do the embedders that include ours.
  target_compile_features(${name} PUBLIC cxx_std_17)
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:include>)
  llvm_update_compile_flags(${name})
  set_property(GLOBAL APPEND PROPERTY VORTEX_EXPORTED_LIBS ${name})
  install(TARGETS ${name} EXPORT VortexTargets
    ARCHIVE DESTINATION lib LIBRARY DESTINATION lib)
endfunction()
