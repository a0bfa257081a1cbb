/* mg_images.h - grids of data-set images for %dataset (samples) and %predict
 * (predictions): one MIME bundle with the grid as image/png (each cell framed green
 * or red when marked), an HTML figure grid with a caption under every image, and a
 * text/plain list of the captions. Pixels are the raw 0..255 values the data set was
 * loaded from (rt_dataset_image_u8 undoes the mean/std normalisation exactly). */
#ifndef MG_IMAGES_H
#define MG_IMAGES_H

#include <jansson.h>

#include "mg.h"
#include "rt.h"

typedef struct mg_grid_cell {
    int index;           /* image index in the data set */
    const char *caption; /* shown under the image (may be NULL) */
    int mark;            /* 0 none, 1 correct (green frame), 2 wrong (red frame) */
} mg_grid_cell;

/* n cells in rows of cols, titled title (may be NULL), shown on out as one
 * display_data; 0, or -1 with err. */
RT_MUST_USE int mg_images_show(const mg_out *out, const rt_dataset *d, const mg_grid_cell *cells,
                               int n, int cols, const char *title, mg_error *err);

/* v with thousands separators, "1,234,567", into buf; returns buf (mg_model.c). */
const char *mg_commas(long v, char buf[32]);

#endif
