/* mg_images.c - sample-image grids (see mg_images.h). Images are upscaled by an
 * integer factor so a 28 x 28 digit is readable, laid out with a 2-pixel frame and a
 * gap; RGB for every data set (gray is replicated) so frames can be coloured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_images.h"
#include "mg_png.h"

#define FRAME 2
#define GAP 4
#define MAX_CELLS 256

/* One image of d as RGB at (x0, y0) of an image w pixels wide, scaled by k. */
static void blit(uint8_t *rgb, int stride_w, int x0, int y0, const rt_dataset *d,
                 const uint8_t *chw, int k)
{
    const int plane = d->h * d->w;
    for (int y = 0; y < d->h * k; y++)
        for (int x = 0; x < d->w * k; x++) {
            uint8_t *px = rgb + 3 * ((size_t)(y0 + y) * (size_t)stride_w + (size_t)(x0 + x));
            int src = (y / k) * d->w + x / k;
            for (int c = 0; c < 3; c++) px[c] = chw[(d->c >= 3 ? c : 0) * plane + src];
        }
}

static void frame(uint8_t *rgb, int stride_w, int x0, int y0, int side_w, int side_h, int mark)
{
    static const uint8_t colors[3][3] = {{200, 200, 200}, {30, 160, 60}, {210, 40, 40}};
    const uint8_t *col = colors[mark < 0 || mark > 2 ? 0 : mark];
    for (int y = 0; y < side_h; y++)
        for (int x = 0; x < side_w; x++) {
            if (y >= FRAME && y < side_h - FRAME && x >= FRAME && x < side_w - FRAME) continue;
            memcpy(rgb + 3 * ((size_t)(y0 + y) * (size_t)stride_w + (size_t)(x0 + x)), col, 3);
        }
}

/* The grid as base64 PNG (new string) or NULL with err. */
static char *grid_png(const rt_dataset *d, const mg_grid_cell *cells, int n, int cols,
                      mg_error *err)
{
    int k = d->h <= 32 ? 2 : 1;
    int cw = d->w * k + 2 * FRAME, ch = d->h * k + 2 * FRAME;
    int rows = (n + cols - 1) / cols;
    int W = cols * cw + (cols + 1) * GAP, H = rows * ch + (rows + 1) * GAP;
    uint8_t *rgb = malloc((size_t)W * (size_t)H * 3);
    uint8_t *chw = malloc((size_t)d->c * (size_t)d->h * (size_t)d->w);
    char *b64 = NULL;
    if (!rgb || !chw) {
        mg_fail(err, "MemoryError", "out of memory drawing %d images", n);
    } else {
        memset(rgb, 255, (size_t)W * (size_t)H * 3);
        for (int i = 0; i < n; i++) {
            int x0 = GAP + (i % cols) * (cw + GAP), y0 = GAP + (i / cols) * (ch + GAP);
            rt_dataset_image_u8(d, cells[i].index, chw);
            frame(rgb, W, x0, y0, cw, ch, cells[i].mark);
            blit(rgb, W, x0 + FRAME, y0 + FRAME, d, chw, k);
        }
        b64 = mg_png_base64(rgb, W, H, 3, err);
    }
    free(rgb);
    free(chw);
    return b64;
}

/* A bundle (new ref) for n cells in rows of cols; title may be NULL. NULL with err. */
static json_t *grid(const rt_dataset *d, const mg_grid_cell *cells, int n, int cols,
                    const char *title, mg_error *err)
{
    if (n <= 0 || n > MAX_CELLS || cols <= 0)
        return mg_fail(err, "ValueError", "image grid: %d images (1..%d)", n, MAX_CELLS), NULL;
    for (int i = 0; i < n; i++)
        if (cells[i].index < 0 || cells[i].index >= d->n)
            return mg_fail(err, "ValueError", "image grid: index %d outside '%s' (%d images)",
                           cells[i].index, d->name, d->n),
                   NULL;
    if (cols > n) cols = n;
    char *b64 = grid_png(d, cells, n, cols, err);
    if (!b64) return NULL;
    /* HTML (what JupyterLab shows): each image as its own small PNG with its caption
     * under it; image/png (nbconvert, other frontends) is the framed grid. */
    char *html = NULL, *text = NULL;
    size_t hl = 0, tl = 0;
    int ok = 1;
    FILE *h = open_memstream(&html, &hl), *t = open_memstream(&text, &tl);
    uint8_t *chw = malloc((size_t)d->c * (size_t)d->h * (size_t)d->w);
    uint8_t *rgb = malloc((size_t)d->h * (size_t)d->w * 3);
    if (h && t && chw && rgb) {
        char *et = title ? mg_html_escape(title) : NULL;
        if (et) fprintf(h, "<div><b>%s</b></div>", et);
        free(et);
        int k = d->h <= 32 ? 2 : 1, cw = d->w * k + 2 * FRAME;
        /* cells wrap onto more rows in a narrow pane (a fixed column count cut the last
         * columns off); max-width keeps at most cols of them per row in a wide one */
        fprintf(h,
                "<div style=\"display:grid;grid-template-columns:repeat(auto-fill,minmax("
                "%dpx,1fr));gap:%dpx;max-width:%dpx;font:11px sans-serif\">",
                cw + 24, GAP, cols * (cw + 24) + (cols - 1) * GAP);
        if (title) fprintf(t, "%s\n", title);
        for (int i = 0; ok && i < n; i++) {
            const char *cap = cells[i].caption ? cells[i].caption : "";
            rt_dataset_image_u8(d, cells[i].index, chw);
            blit(rgb, d->w, 0, 0, d, chw, 1);
            char *one = mg_png_base64(rgb, d->w, d->h, 3, err);
            char *ec = mg_html_escape(cap);
            ok = one && ec;
            if (ok)
                fprintf(h,
                        "<div style=\"text-align:center;color:%s\"><img alt=\"%d\" "
                        "style=\"border:%dpx solid %s;image-rendering:pixelated\" "
                        "width=\"%d\" src=\"data:image/png;base64,%s\"/><br/>%s</div>",
                        cells[i].mark == 2 ? "#c22" : "inherit", cells[i].index, FRAME,
                        cells[i].mark == 1   ? "#1ea03c"
                        : cells[i].mark == 2 ? "#d22"
                                             : "#ccc",
                        d->w * k, one, ec);
            free(one);
            free(ec);
            fprintf(t, "[%d] %s%s", cells[i].index, cap, (i + 1) % cols && i + 1 < n ? "\t" : "\n");
        }
        fputs("</div>", h);
    }
    free(chw);
    free(rgb);
    if (h) fclose(h);
    if (t) fclose(t);
    json_t *bundle = NULL;
    if (ok && html && text)
        bundle =
            json_pack("{s:s, s:s, s:s}", "image/png", b64, "text/plain", text, "text/html", html);
    if (!bundle) mg_fail(err, "MemoryError", "out of memory building the image grid");
    free(b64);
    free(html);
    free(text);
    return bundle;
}

int mg_images_show(const mg_out *out, const rt_dataset *d, const mg_grid_cell *cells, int n,
                   int cols, const char *title, mg_error *err)
{
    json_t *b = grid(d, cells, n, cols, title, err);
    if (!b) return -1;
    out->display(out->user, b, NULL, NULL, 0);
    json_decref(b);
    return 0;
}
