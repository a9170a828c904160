"""The bert_lm baseline of projects/paper_analysis/__main__.py: one encoder-decoder
checkpoint from a masked-LM encoder and a language-model decoder."""

import os

from projects.quiet_logs import quiet_logs


def join_bert_lm(encoder_checkpoint, decoder_checkpoint, output, seed=1):
    """One transformer_mass checkpoint from the masked-LM encoder and the
    language-model decoder; the decoder's attention over the encoder is
    freshly initialised (neither pre-training trained it usefully). The
    shared embeddings are the decoder's, which the output layer also uses."""
    import torch
    from fairseq import checkpoint_utils
    from omegaconf import OmegaConf

    import mass_plugin  # noqa: F401  (registers the task and the model)

    torch.manual_seed(seed)
    quiet_logs()
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(decoder_checkpoint)])
    model = models[0]
    for layer in model.decoder.layers:
        layer.encoder_attn.reset_parameters()
        layer.encoder_attn_layer_norm.reset_parameters()
    encoder_state = checkpoint_utils.load_checkpoint_to_cpu(str(encoder_checkpoint))["model"]
    encoder_only = {name[len("encoder."):]: value for name, value in encoder_state.items()
                    if name.startswith("encoder.") and "embed_tokens" not in name}
    missing, unexpected = model.encoder.load_state_dict(encoder_only, strict=False)
    if unexpected or [name for name in missing if "embed_tokens" not in name]:
        raise RuntimeError(f"the encoder checkpoint does not fit: missing {missing}, "
                           f"unexpected {unexpected}")
    state = checkpoint_utils.load_checkpoint_to_cpu(str(decoder_checkpoint))
    state["model"] = model.state_dict()
    state["cfg"] = OmegaConf.to_container(state["cfg"], resolve=True, enum_to_str=True)
    state["last_optimizer_state"] = None
    torch.save(state, str(output) + ".tmp")
    os.replace(str(output) + ".tmp", output)
