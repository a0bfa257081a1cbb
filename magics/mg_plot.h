/* mg_plot.h - a small SVG line-chart renderer for magics: several named series,
 * axes with "nice" ticks, grid, legend, title. Used by %results compare/show and by
 * %train's live loss/accuracy plot (call it again with longer series and send the
 * result as an update_display_data).
 *
 * Output is a self-contained SVG document (no scripts, no external fonts), suitable
 * for an "image/svg+xml" entry of a MIME bundle. Series longer than about twice the
 * plot width are reduced to the minimum and maximum of each pixel column, so spikes
 * stay visible and the SVG stays small however many steps were logged.
 */
#ifndef MG_PLOT_H
#define MG_PLOT_H

#include <stddef.h>

typedef struct mg_plot_series {
    const char *name; /* legend label (may be NULL: no legend entry) */
    const double *x;  /* n points; x may be NULL for 0, 1, 2, ... */
    const double *y;  /* NaN or infinite y breaks the line */
    size_t n;
} mg_plot_series;

typedef struct mg_plot_opts {
    const char *title;  /* may be NULL */
    const char *xlabel; /* may be NULL */
    const char *ylabel; /* may be NULL */
    int width, height;  /* pixels; 0 = 640 x 360 */
    int log_y;          /* log10 y axis; y <= 0 is left out */
    int log_x;          /* log10 x axis; x <= 0 is left out */
    double ymin, ymax;  /* fixed y range when ymin < ymax, else from the data */
} mg_plot_opts;

/* Renders the chart. o may be NULL (defaults). Returns a new NUL-terminated string
 * (free()), or NULL when n < 0, s is NULL with n > 0, or memory runs out. No data
 * gives axes and a "no data" note rather than an error. */
char *mg_plot_svg(const mg_plot_series *s, int n, const mg_plot_opts *o);

/* The colour of series i (a 10-colour palette, repeating): "#1f77b4", ... */
const char *mg_plot_color(int i);

#endif
