# SPDX-License-Identifier: Apache-2.0
# hvd.keras's suite (tests/python/keras, label keras) on Keras 3's JAX backend (on
# HVD_PYTHON_JAX_INTERPRETER, whose jaxlib hvd.jax's custom calls were built against; 2 and 3
# ranks), its torch backend (on the first of HVD_PYTHON_TORCH_INTERPRETERS that has keras;
# 2 ranks) and its TensorFlow backend (2 ranks), the same suite on hvd.tensorflow.keras, and
# the keras_digits example, with the default hvd backend.
list(GET hvd_py_backends -1 hvd_keras_backend)
set(hvd_keras_env "PYTHONPATH=${HVD_PYTHON_BUILD_DIR};HVD_OP_TIMEOUT=60;PYTHONDONTWRITEBYTECODE=1"
    "TF_CPP_MIN_LOG_LEVEL=2"
    "HVD_PY_BACKEND=${hvd_keras_backend}" "JAX_PLATFORMS=cpu")

# hvd_keras_suite(<name> <keras backend> <module> <interpreter> <ranks...>): the suite on
# module (hvd.keras or hvd.tensorflow.keras) as python.keras.<name>.np<ranks>.
function(hvd_keras_suite name kbackend module interpreter)
  foreach(np ${ARGN})
    set(tname python.keras.${name}.np${np})
    add_test(NAME ${tname}
      COMMAND $<TARGET_FILE:hvdrun> -np ${np} ${interpreter} -m pytest -x -q -p no:cacheprovider
              ${CMAKE_CURRENT_SOURCE_DIR}/python/keras
      WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    set_tests_properties(${tname} PROPERTIES LABELS "python;keras" TIMEOUT 300
      ENVIRONMENT "${hvd_keras_env};KERAS_BACKEND=${kbackend};HVD_KERAS_MODULE=${module}")
  endforeach()
endfunction()

# Whether interpreter has keras (and what the Keras backend needs) for kbackend.
function(hvd_keras_ready kbackend interpreter modules out)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env KERAS_BACKEND=${kbackend} ${interpreter} -c
                          "import keras, pytest, ${modules}"
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(rc EQUAL 0)
    set(${out} ON PARENT_SCOPE)
  else()
    set(${out} OFF PARENT_SCOPE)
  endif()
endfunction()

if(HVD_PYTHON_HAS_JAX)
  hvd_keras_ready(jax ${HVD_PYTHON_JAX_INTERPRETER} "jax, sklearn" hvd_keras_jax)
  if(hvd_keras_jax)
    hvd_keras_suite(jax jax hvd.keras ${HVD_PYTHON_JAX_INTERPRETER} 2 3)
    # The digits example on 1 and 2 ranks reaches the 1-rank accuracy.
    add_test(NAME python.keras.digits
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/../jax/test_digits.sh $<TARGET_FILE:hvdrun>
              ${HVD_PYTHON_BUILD_DIR} ${HVD_PYTHON_JAX_INTERPRETER})
    set(env "HVD_PY_BACKEND=${hvd_keras_backend}" "KERAS_BACKEND=jax" "HVD_DIGITS_RANKS=1 2"
        "HVD_DIGITS_EXAMPLE=keras_digits.py")
    set_tests_properties(python.keras.digits PROPERTIES LABELS "python;keras" TIMEOUT 300
      ENVIRONMENT "${env}")
  else()
    message(WARNING "${HVD_PYTHON_JAX_INTERPRETER} lacks keras or scikit-learn: hvd.keras is "
                    "not tested on Keras's JAX backend")
  endif()
endif()

foreach(interp ${HVD_PYTHON_TORCH_INTERPRETERS})
  hvd_keras_ready(torch ${interp} torch hvd_keras_torch)
  if(hvd_keras_torch)
    hvd_keras_suite(torch torch hvd.keras ${interp} 2)
    break()
  endif()
endforeach()
if(NOT hvd_keras_torch)
  message(WARNING "no interpreter of HVD_PYTHON_TORCH_INTERPRETERS has keras: hvd.keras is not "
                  "tested on Keras's torch backend")
endif()

# hvd.keras and hvd.tensorflow.keras (its optimizer reducing as DistributedGradientTape does)
# on Keras's TensorFlow backend, on HVD_PYTHON_TF_INTERPRETER (whose TensorFlow
# hvd.tensorflow's ops were built against), 2 ranks.
if(HVD_PYTHON_HAS_TF)
  hvd_keras_ready(tensorflow ${HVD_PYTHON_TF_INTERPRETER} tensorflow hvd_keras_tf)
  if(hvd_keras_tf)
    hvd_keras_suite(tensorflow tensorflow hvd.keras ${HVD_PYTHON_TF_INTERPRETER} 2)
    hvd_keras_suite(tensorflow_keras tensorflow hvd.tensorflow.keras
                    ${HVD_PYTHON_TF_INTERPRETER} 2)
  else()
    message(WARNING "${HVD_PYTHON_TF_INTERPRETER} lacks keras: hvd.keras is not tested on "
                    "Keras's TensorFlow backend")
  endif()
endif()
