/* The proxy and device tables. Parameter counts are those published for
 * each model; forward FLOPs are 2 x the published multiply-accumulates for
 * the CNNs and, for the transformers, Kaplan et al. 2020 (arXiv:2001.08361,
 * Table 1): per token 2 N + 2 n_layer n_ctx d_model with N the
 * non-embedding parameters, plus 2 d_model V for a language model's output
 * logits; times the tokens of one sequence. */
#include "workloads/presets.h"

#include <string.h>
#include <strings.h>

const wl_proxy wl_proxy_table[] = {
    {"resnet18", 11689512, 3.628e9, 1.0884e10, "224x224x3 image",
     "He et al. 2016 (arXiv:1512.03385); torchvision model card: 11,689,512 params, "
     "1.814 GMACs"},
    {"resnet50", 25557032, 8.178e9, 2.4534e10, "224x224x3 image",
     "He et al. 2016 (arXiv:1512.03385); torchvision model card: 25,557,032 params, "
     "4.089 GMACs"},
    {"resnet101", 44549160, 1.5602e10, 4.6806e10, "224x224x3 image",
     "He et al. 2016 (arXiv:1512.03385); torchvision model card: 44,549,160 params, "
     "7.801 GMACs"},
    {"inception_v3", 23834568, 1.1426432192e10, 3.4279296576e10, "299x299x3 image",
     "Szegedy et al. 2016 (arXiv:1512.00567); torchvision model card: 27,161,264 params "
     "with the auxiliary classifier (3,326,696; training only, not counted), 5.71 GMACs"},
    {"vgg16", 138357544, 3.094e10, 9.282e10, "224x224x3 image",
     "Simonyan & Zisserman 2015 (arXiv:1409.1556); torchvision model card: 138,357,544 "
     "params, 15.47 GMACs"},
    {"lstm_ptb", 66022000, 3.57e9, 1.071e10, "35-token sequence (PTB, vocabulary 10k)",
     "Zaremba et al. 2014 (arXiv:1409.2329) large model: 2 LSTM layers of 1500, 66M params; "
     "per token 4*1500*3000 MACs per layer + 1500*10000 softmax MACs"},
    {"bert_base", 110000000, 2.2045e10, 6.6136e10, "128-token sequence",
     "Devlin et al. 2019 (arXiv:1810.04805): 110M params, L=12, d=768; FLOPs by Kaplan et "
     "al. 2020 with N = 84.9M non-embedding params, MLM head not counted"},
    {"bert_large", 340000000, 7.8115e10, 2.3434e11, "128-token sequence",
     "Devlin et al. 2019 (arXiv:1810.04805): 340M params, L=24, d=1024; FLOPs by Kaplan et "
     "al. 2020 with N = 302M non-embedding params, MLM head not counted"},
    {"gpt2", 124000000, 2.7232e11, 8.1696e11, "1024-token sequence",
     "Radford et al. 2019; Hugging Face gpt2 model card: 124M params, L=12, d=768, "
     "V=50257; FLOPs by Kaplan et al. 2020 plus the output logits"},
    {"gpt2_xl", 1558000000, 3.3456e12, 1.0037e13, "1024-token sequence",
     "Radford et al. 2019; Hugging Face gpt2-xl model card: 1.5B params, L=48, d=1600, "
     "V=50257; FLOPs by Kaplan et al. 2020 plus the output logits"},
    {"llama_7b", 6738000000, 2.8162e13, 8.4486e13, "2048-token sequence",
     "Touvron et al. 2023 (arXiv:2302.13971): 6.7B params, L=32, d=4096, SwiGLU 11008, "
     "V=32000; FLOPs by Kaplan et al. 2020 plus the output logits"},
    {NULL, 0, 0, 0, NULL, NULL},
};

/* Peaks: fp32 without tensor cores; tf32, fp16 and bf16 on tensor cores,
 * dense (the datasheets of A100 and H100 also list twice these "with
 * sparsity"; not used). A device without a unit for a precision has 0
 * there: asking for it is an error, not a silent fallback. */
const wl_device wl_device_table[] = {
    {"p100", 10.6e12, "fp32",
     "NVIDIA Tesla P100 (SXM2, NVLink) datasheet: 10.6 TFLOPS single precision, 21.2 "
     "TFLOPS half precision; no tf32, no bf16",
     {10.6e12, 0, 21.2e12, 0}},
    {"v100", 15.7e12, "fp32",
     "NVIDIA Tesla V100 SXM2 datasheet: 15.7 TFLOPS single precision, 125 TFLOPS tensor "
     "performance (fp16); no tf32, no bf16",
     {15.7e12, 0, 125e12, 0}},
    {"a100", 19.5e12, "fp32",
     "NVIDIA A100 (SXM) datasheet: 19.5 TFLOPS FP32, 156 TFLOPS TF32 tensor core, 312 "
     "TFLOPS BF16 and FP16 tensor core (dense)",
     {19.5e12, 156e12, 312e12, 312e12}},
    {"h100", 67e12, "fp32",
     "NVIDIA H100 SXM5 datasheet: 67 TFLOPS FP32; TF32 989, BF16 and FP16 1979 TFLOPS "
     "with sparsity, half of that dense: 494.5 and 989.5",
     {67e12, 494.5e12, 989.5e12, 989.5e12}},
    {"laptop_cpu", 358.4e9, "fp32",
     "4 cores x 2.8 GHz x 32 FP32 FLOP/cycle (two 8-wide AVX2 FMA units), e.g. Intel Core "
     "i7-1165G7 at base clock",
     {358.4e9, 0, 0, 0}},
    {NULL, 0, NULL, NULL, {0, 0, 0, 0}},
};

/* Published single-device training throughputs (images per second). */
#define TF_P100                                                                          \
    "TensorFlow performance benchmarks (tensorflow/docs_src/performance/benchmarks.md, "   \
    "May 2017): DGX-1 P100, tf_cnn_benchmarks, batch 64, synthetic data, 1 GPU: "
#define DLE_RN50                                                                         \
    "NVIDIA DeepLearningExamples PyTorch/Classification/ConvNets/resnet50v1.5 README "     \
    "(pytorch-21.03 container), 1 GPU: "
const wl_throughput wl_throughput_table[] = {
    {"p100", "inception_v3", WL_FP32, 142, 64, 1, TF_P100 "InceptionV3 142 images/s"},
    {"p100", "resnet50", WL_FP32, 219, 64, 1, TF_P100 "ResNet-50 219 images/s"},
    {"p100", "vgg16", WL_FP32, 154, 64, 1, TF_P100 "VGG16 154 images/s"},
    {"p100", "resnet101", WL_FP32, 125, 64, 0,
     "not published there (not confirmed): efficiency interpolated linearly in training "
     "FLOPs between the same table's ResNet-50 (219 images/s: 0.507) and ResNet-152 (91.8 "
     "images/s x 69.08 GFLOPs, torchvision's 11.514 GMACs: 0.598)"},
    {"v100", "resnet50", WL_FP32, 367, 256, 1, DLE_RN50 "DGX-1 V100 16GB, FP32 367 images/s"},
    {"v100", "resnet50", WL_FP16, 1200, 256, 1,
     DLE_RN50 "DGX-1 V100 16GB, mixed precision 1200 images/s"},
    {"a100", "resnet50", WL_TF32, 938, 256, 1, DLE_RN50 "DGX A100 80GB, TF32 938 images/s"},
    {"a100", "resnet50", WL_FP16, 2470, 256, 1,
     DLE_RN50 "DGX A100 80GB, mixed precision 2470 images/s"},
    {NULL, NULL, WL_FP32, 0, 0, 0, NULL},
};
#undef TF_P100
#undef DLE_RN50

const wl_proxy *wl_proxy_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; wl_proxy_table[i].name; i++)
        if (strcasecmp(wl_proxy_table[i].name, name) == 0)
            return &wl_proxy_table[i];
    return NULL;
}

const wl_device *wl_device_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; wl_device_table[i].name; i++)
        if (strcasecmp(wl_device_table[i].name, name) == 0)
            return &wl_device_table[i];
    return NULL;
}

static const char *const precision_names[WL_PRECISIONS] = {"fp32", "tf32", "fp16", "bf16"};

int wl_precision_find(const char *name)
{
    for (int i = 0; name && i < WL_PRECISIONS; i++)
        if (strcasecmp(precision_names[i], name) == 0)
            return i;
    return -1;
}

const char *wl_precision_name(int precision)
{
    return precision >= 0 && precision < WL_PRECISIONS ? precision_names[precision] : NULL;
}

double wl_device_peak(const wl_device *d, int precision)
{
    if (!d || precision < 0 || precision >= WL_PRECISIONS)
        return 0.0;
    return d->peak[precision];
}

const wl_throughput *wl_throughput_find(const char *device, const char *proxy, int precision)
{
    if (!device || !proxy)
        return NULL;
    for (int i = 0; wl_throughput_table[i].device; i++) {
        const wl_throughput *t = &wl_throughput_table[i];
        if (strcasecmp(t->device, device) == 0 && strcasecmp(t->proxy, proxy) == 0 &&
            (int)t->precision == precision)
            return t;
    }
    return NULL;
}

double wl_device_efficiency(const char *device, const wl_proxy *proxy, int precision)
{
    const wl_throughput *t = wl_throughput_find(device, proxy ? proxy->name : NULL, precision);
    double peak = wl_device_peak(wl_device_find(device), precision);
    if (!t || !(peak > 0))
        return 0.0;
    return t->samples_per_s * proxy->flops_per_sample / peak;
}
