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

const wl_device wl_device_table[] = {
    {"v100", 15.7e12, "fp32", "NVIDIA Tesla V100 SXM2 datasheet: 15.7 TFLOPS single precision"},
    {"a100", 19.5e12, "fp32",
     "NVIDIA A100 datasheet: 19.5 TFLOPS FP32 (TF32 tensor cores: 156, not used: the "
     "simulated models are fp32)"},
    {"h100", 67e12, "fp32", "NVIDIA H100 SXM5 datasheet: 67 TFLOPS FP32"},
    {"laptop_cpu", 358.4e9, "fp32",
     "4 cores x 2.8 GHz x 32 FP32 FLOP/cycle (two 8-wide AVX2 FMA units), e.g. Intel Core "
     "i7-1165G7 at base clock"},
    {NULL, 0, NULL, NULL},
};

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
