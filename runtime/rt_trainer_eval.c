/* rt_trainer_eval.c - evaluation of a model on a data set: mean loss, accuracy, the
 * confusion matrix ([true][predicted]), the rank of each label's probability (top-k
 * accuracy) and the predictions of the first samples.
 *
 * Runs in eval mode (BN running statistics, dropout off) in batches of the model's max
 * batch, in data-set order; per-sample losses are summed in double in that order, so
 * the result is deterministic. Host staging is allocated per call (not a training step),
 * with a batch of floats for a set held as pixels (an image folder).
 */
#include <stdlib.h>
#include <string.h>

#include "rt_trainer.h"

rt_status rt_trainer_evaluate(rt_model *m, const rt_dataset *d, int max_preds, rt_eval_result *out,
                              rt_error *err)
{
    rt_backend *b = rt_model_backend(m);
    const rt_model_input *in = rt_model_input_shape(m);
    if (!b) return RT_ERR(err, RT_EINVAL, "the model is not attached to a device");
    if (d->c != in->c || d->h != in->h || d->w != in->w || d->num_classes != in->num_classes)
        return RT_ERR(err, RT_EINVAL,
                      "the data set '%s' (%dx%dx%d, %d classes) does not fit "
                      "the model (%dx%dx%d, %d classes)",
                      d->name, d->c, d->h, d->w, d->num_classes, in->c, in->h, in->w,
                      in->num_classes);
    if (max_preds < 0) max_preds = 0;
    if (max_preds > RT_EVAL_MAX_PREDS) max_preds = RT_EVAL_MAX_PREDS;
    memset(out, 0, sizeof *out);
    out->num_classes = d->num_classes;
    const int B = rt_model_max_batch(m), L = d->num_classes;
    const size_t img = (size_t)d->c * d->h * d->w;
    float *probs = malloc((size_t)B * L * sizeof *probs), *losses = malloc((size_t)B * 4);
    float *batch = d->images ? NULL : malloc((size_t)B * img * sizeof *batch); /* pixels */
    int32_t *labels = malloc((size_t)B * sizeof *labels);
    rt_status s = RT_OK;
    if (!probs || !losses || !labels || (!d->images && !batch))
        s = RT_ERR(err, RT_ENOMEM, "out of memory evaluating");
    double loss_sum = 0.0;
    int64_t correct = 0;
    for (int start = 0; start < d->n && s == RT_OK; start += B) {
        int count = d->n - start < B ? d->n - start : B;
        for (int i = 0; i < count; i++) {
            labels[i] = d->labels[start + i];
            if (labels[i] >= L) {
                s = RT_ERR(err, RT_EINVAL, "label %d of image %d outside [0, %d) in '%s'",
                           labels[i], start + i, L, d->name);
                break;
            }
        }
        if (s != RT_OK) break;
        for (int i = 0; batch && i < count; i++)
            rt_dataset_image_f32(d, start + i, batch + (size_t)i * img);
        s = rt_backend_upload(b, rt_model_input_tensor(m),
                              batch ? batch : d->images + (size_t)start * img,
                              (size_t)count * img * 4, err);
        if (s == RT_OK)
            s = rt_backend_upload(b, rt_model_label_tensor(m), labels, (size_t)count * 4, err);
        if (s == RT_OK) s = rt_model_forward(m, count, 0, 0, err);
        if (s == RT_OK) s = rt_model_loss(m, count, NULL, probs, losses, err);
        for (int i = 0; i < count && s == RT_OK; i++) {
            const float *p = probs + (size_t)i * L;
            int best = 0;
            for (int j = 1; j < L; j++)
                if (p[j] > p[best]) best = j;
            loss_sum += losses[i];
            correct += best == labels[i];
            const int y = labels[i];
            int rank = 0;
            for (int j = 0; j < L; j++) rank += p[j] > p[y] || (p[j] == p[y] && j < y);
            out->rank[rank]++;
            out->confusion[labels[i]][best]++;
            if (out->npreds < max_preds)
                out->preds[out->npreds++] = (rt_prediction){start + i, labels[i], best, p[best]};
        }
    }
    free(probs);
    free(losses);
    free(batch);
    free(labels);
    if (s != RT_OK) return s;
    out->n = d->n;
    out->loss = d->n ? loss_sum / d->n : 0.0;
    out->accuracy = d->n ? (double)correct / d->n : 0.0;
    return RT_OK;
}

double rt_eval_topk(const rt_eval_result *e, int k)
{
    if (e->n <= 0 || k < 1) return 0.0;
    int64_t hit = 0;
    for (int r = 0; r < k && r < e->num_classes && r < RT_MAX_CLASSES; r++) hit += e->rank[r];
    return (double)hit / (double)e->n;
}
