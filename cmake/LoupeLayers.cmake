# The layering check (tests/layers): each layer's code may include only its
# own headers and those of the loupe libraries it links. Which libraries
# those are is read from target_link_libraries, so it is written only there.

# loupe_layer_manifest(<target> ROOT <include root of its src> DIR <its own
#                      files> HEADERS <public headers, as included>)
# enters <target> in the check.
function(loupe_layer_manifest target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "ROOT;DIR" "HEADERS")
  set_property(GLOBAL APPEND PROPERTY LOUPE_LAYER_TARGETS ${target})
  set_target_properties(${target} PROPERTIES
    LOUPE_LAYER_ROOT ${arg_ROOT} LOUPE_LAYER_DIR ${arg_DIR} LOUPE_PUBLIC_HEADERS "${arg_HEADERS}")
endfunction()

# Writes ${CMAKE_BINARY_DIR}/layers.txt, one record per target:
#   target <name>
#   root <directory its internal includes are relative to>
#   dir <directory of its own files>
#   uses <a loupe target it links>            (one line each)
#   header <public header> <its path>          (one line each)
#   source <a source file of the target>       (one line each)
# Called once, after every target exists.
function(loupe_write_layer_manifest)
  get_property(targets GLOBAL PROPERTY LOUPE_LAYER_TARGETS)
  set(text "")
  foreach(target IN LISTS targets)
    get_target_property(root ${target} LOUPE_LAYER_ROOT)
    get_target_property(dir ${target} LOUPE_LAYER_DIR)
    get_target_property(source_dir ${target} SOURCE_DIR)
    string(APPEND text "target ${target}\nroot ${root}\ndir ${dir}\n")
    get_target_property(links ${target} LINK_LIBRARIES)
    foreach(link IN LISTS links)
      if(link IN_LIST targets)
        string(APPEND text "uses ${link}\n")
      endif()
    endforeach()
    get_target_property(headers ${target} LOUPE_PUBLIC_HEADERS)
    foreach(header IN LISTS headers)
      string(REGEX REPLACE "^.*/include/" "" included ${header})
      string(APPEND text "header ${included} ${header}\n")
    endforeach()
    get_target_property(sources ${target} SOURCES)
    foreach(source IN LISTS sources)
      cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${source_dir})
      string(APPEND text "source ${source}\n")
    endforeach()
  endforeach()
  file(WRITE ${CMAKE_BINARY_DIR}/layers.txt "${text}")
endfunction()
