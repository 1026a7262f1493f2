# Build facts for `fsq --version`, packed-checkpoint provenance and JSON reports: the git
# commit (short hash, "unknown" outside a git checkout) and the build type, read at configure
# time. Only tools/fsq/build_info.cpp.in uses them, so a new commit recompiles one small file
# and relinks fsq. CMake reconfigures by itself when HEAD or the branch it names moves.
set(FSQ_GIT_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short HEAD
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0 AND commit)
    set(FSQ_GIT_COMMIT "${commit}")
    # The files whose change means a new commit: HEAD, the branch ref, packed-refs.
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --symbolic-full-name HEAD
                    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                    OUTPUT_VARIABLE ref OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    foreach(name HEAD packed-refs ${ref})
      execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --git-path ${name}
                      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                      OUTPUT_VARIABLE file OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(file AND NOT IS_ABSOLUTE "${file}")
        set(file "${PROJECT_SOURCE_DIR}/${file}")
      endif()
      if(file AND EXISTS "${file}")
        set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
      endif()
    endforeach()
  endif()
endif()
set(FSQ_BUILD_TYPE "${CMAKE_BUILD_TYPE}")
if(NOT FSQ_BUILD_TYPE)
  set(FSQ_BUILD_TYPE "multi-config")
endif()
message(STATUS "fsq: version ${PROJECT_VERSION}, commit ${FSQ_GIT_COMMIT}, ${FSQ_BUILD_TYPE} build")
