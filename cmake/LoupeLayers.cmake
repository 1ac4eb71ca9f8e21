# The layering check (tests/layers): each layer's code may include only its
# own headers and those of the loupe libraries it links. Which libraries
# those are is read from target_link_libraries, so it is written only there.

# loupe_layer_manifest(<target> [PUBLIC_ONLY] ROOT <include root of its src>
#                      DIR <its own files> HEADERS <public headers, as included>)
# enters <target> in the check. A PUBLIC_ONLY target (the CLI, the viewer,
# the Python module: what is built on the profiler, not in it) may include
# only the public headers of what it links, never a library's src/.
function(loupe_layer_manifest target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "PUBLIC_ONLY" "ROOT;DIR" "HEADERS")
  set_property(GLOBAL APPEND PROPERTY LOUPE_LAYER_TARGETS ${target})
  set_target_properties(${target} PROPERTIES
    LOUPE_LAYER_ROOT ${arg_ROOT} LOUPE_LAYER_DIR ${arg_DIR} LOUPE_PUBLIC_HEADERS "${arg_HEADERS}"
    LOUPE_LAYER_PUBLIC_ONLY ${arg_PUBLIC_ONLY})
endfunction()

# Writes ${CMAKE_BINARY_DIR}/layers.txt, one record per target:
#   target <name>
#   root <directory its internal includes are relative to>
#   dir <directory of its own files>
#   public_only                                (a PUBLIC_ONLY target's only)
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
    get_target_property(public_only ${target} LOUPE_LAYER_PUBLIC_ONLY)
    if(public_only)
      string(APPEND text "public_only\n")
    endif()
    get_target_property(links ${target} LINK_LIBRARIES)
    set(used "")
    foreach(link IN LISTS links)
      if(link IN_LIST targets)
        list(APPEND used ${link})
      elseif(TARGET ${link})
        # An umbrella (loupe_profiler): what it links, for who links it.
        get_target_property(type ${link} TYPE)
        if(type STREQUAL "INTERFACE_LIBRARY")
          get_target_property(inner ${link} INTERFACE_LINK_LIBRARIES)
          foreach(i IN LISTS inner)
            if(i IN_LIST targets)
              list(APPEND used ${i})
            endif()
          endforeach()
        endif()
      endif()
    endforeach()
    list(REMOVE_DUPLICATES used)
    foreach(link IN LISTS used)
      string(APPEND text "uses ${link}\n")
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
