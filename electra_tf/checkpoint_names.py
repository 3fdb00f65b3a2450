"""Our variables under the reference's TF1 checkpoint names (spec section 4).

One function builds ``{reference_name: variable}`` for any model of ours; importing a released checkpoint,
exporting the reference layout and exporting to Hugging Face all start from this map. Kernels keep the
reference's [in, out] layout, which is Keras's too, so values copy across unchanged.
"""

import typing

from electra_tf.modeling.encoder import ElectraEncoder
from electra_tf.modeling.pretraining_heads import DiscriminatorHead, GeneratorHead
from electra_tf.modeling.models import PretrainingNetworks, TwoTowerGenerator


def _dense(prefix: str, dense) -> dict:
  return {f"{prefix}/kernel": dense.kernel, f"{prefix}/bias": dense.bias}


def _layer_norm(prefix: str, ln) -> dict:
  return {f"{prefix}/gamma": ln.gamma, f"{prefix}/beta": ln.beta}


def embeddings_variables(encoder: ElectraEncoder, scope: str) -> dict:
  emb = encoder.embeddings
  names = {f"{scope}/embeddings/word_embeddings": emb.word_embeddings,
           f"{scope}/embeddings/token_type_embeddings": emb.token_type_embeddings,
           f"{scope}/embeddings/position_embeddings": emb.position_embeddings}
  names.update(_layer_norm(f"{scope}/embeddings/LayerNorm", emb.layer_norm))
  return names


def encoder_variables(encoder: ElectraEncoder, scope: str, embeddings_scope: typing.Optional[str] = None) -> dict:
  """``<scope>/embeddings_project`` and ``<scope>/encoder/layer_i/...``; the embeddings under
  ``embeddings_scope`` (None leaves them out, for a generator that borrows the discriminator's)."""
  names = embeddings_variables(encoder, embeddings_scope) if embeddings_scope else {}
  if encoder.embeddings_project is not None:
    names.update(_dense(f"{scope}/embeddings_project", encoder.embeddings_project))
  for i, layer in enumerate(encoder.transformer_layers):
    p = f"{scope}/encoder/layer_{i}"
    names.update(_dense(f"{p}/attention/self/query", layer.attention.query))
    names.update(_dense(f"{p}/attention/self/key", layer.attention.key))
    names.update(_dense(f"{p}/attention/self/value", layer.attention.value))
    names.update(_dense(f"{p}/attention/output/dense", layer.attention_output_dense))
    names.update(_layer_norm(f"{p}/attention/output/LayerNorm", layer.attention_layer_norm))
    names.update(_dense(f"{p}/intermediate/dense", layer.intermediate_dense))
    names.update(_dense(f"{p}/output/dense", layer.output_dense))
    names.update(_layer_norm(f"{p}/output/LayerNorm", layer.output_layer_norm))
  return names


def discriminator_head_variables(head: DiscriminatorHead) -> dict:
  return {**_dense("discriminator_predictions/dense", head.dense),
          **_dense("discriminator_predictions/dense_1", head.dense_1)}


def generator_head_variables(head: GeneratorHead, scope: str = "generator_predictions") -> dict:
  return {**_dense(f"{scope}/dense", head.dense),
          **_layer_norm(f"{scope}/LayerNorm", head.layer_norm),
          f"{scope}/output_bias": head.output_bias}


def reference_variables(networks: PretrainingNetworks) -> dict:
  """All pre-training weights under their reference names (no optimizer slots, no global_step)."""
  names = {}
  disc, gen = networks.discriminator, networks.generator
  if disc is not None:
    names.update(encoder_variables(disc.encoder, "electra", embeddings_scope="electra"))
    names.update(discriminator_head_variables(disc.head))
  if gen is not None:
    if isinstance(gen, TwoTowerGenerator):  # ELECTRIC: generator_{ltr,rtl}/..., cloze_predictions/...
      for scope, tower in (("generator_ltr", gen.ltr), ("generator_rtl", gen.rtl)):
        own = tower.embeddings is not (disc.encoder.embeddings if disc is not None else None)
        names.update(encoder_variables(tower, scope, embeddings_scope=scope if own else None))
      names.update(generator_head_variables(gen.head, "cloze_predictions"))
      return names
    if networks.generator_scope == "electra":  # tied: the generator is the "electra" encoder itself
      names.update(encoder_variables(gen.encoder, "electra", embeddings_scope="electra"))
    else:
      own_embeddings = networks.generator_embeddings_scope == "generator"
      names.update(encoder_variables(gen.encoder, "generator",
                                     embeddings_scope="generator" if own_embeddings else None))
      if not own_embeddings and disc is None:
        names.update(embeddings_variables(gen.encoder, "electra"))
    names.update(generator_head_variables(gen.head))
  return names
