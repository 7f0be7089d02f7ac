"""tools/glm_golden/v4config.py — writes a config.json as transformers 4.5x writes it (top-level
rope_theta and partial_rotary_factor, no rope_parameters). Run by tools/gen_glm_golden.py with the
interpreter of its second venv (transformers==4.57.6, no torch):

    python v4config.py MODEL_TYPE OUT_PATH < kwargs.json

The config class is built with the same keyword arguments as the 5.x model, plus the two keys
that PreTrainedModel.save_pretrained adds (architectures, torch_dtype), and saved with
PretrainedConfig.save_pretrained, which is what model.save_pretrained calls."""

import json
import os
import shutil
import sys
import tempfile


def main():
    model_type, out = sys.argv[1], sys.argv[2]
    kwargs = json.load(sys.stdin)
    import transformers
    from transformers import Glm4Config, Glm4MoeConfig

    cls, arch = {"glm4": (Glm4Config, "Glm4ForCausalLM"),
                 "glm4_moe": (Glm4MoeConfig, "Glm4MoeForCausalLM")}[model_type]
    cfg = cls(**kwargs, architectures=[arch], torch_dtype="float32")
    tmp = tempfile.mkdtemp()
    try:
        cfg.save_pretrained(tmp)
        shutil.copy(os.path.join(tmp, "config.json"), out)
    finally:
        shutil.rmtree(tmp)
    print(transformers.__version__)


if __name__ == "__main__":
    main()
