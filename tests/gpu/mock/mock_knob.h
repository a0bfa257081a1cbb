/* mock_knob.h - the mocks' settings: an environment variable (KILN_MOCK_DEVICE,
 * KILN_MOCK_CUDNN) holding a comma-separated list of `knob` or `knob=V`. */
#ifndef MOCK_KNOB_H
#define MOCK_KNOB_H

/* In env's list: `name` gives 1, `name=V` gives V; dflt when it is not there. */
long mock_knob(const char *env, const char *name, long dflt);

#endif
