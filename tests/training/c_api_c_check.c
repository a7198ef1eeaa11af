/* Compiled as strict C99: the training C API header is C. */
#include <onyx/onyx_training_c_api.h>

int onyx_training_c_api_c_check(void);
int onyx_training_c_api_c_check(void) {
  OnyxPropertyType type = ONYX_PROPERTY_STRING;
  OnyxTrainingSession* session = 0;
  return (int)type + (session == 0) + (int)onyx_training_session_input_count(session, false);
}
