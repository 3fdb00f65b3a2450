"""ELECTRA networks: layers (embeddings, transformer layer), the encoder, heads and the G/D pair."""

from electra_tf.modeling.activations import gelu, get_activation
from electra_tf.modeling.dropout import RowKeyedSeed, derive_seed, stateless_dropout
from electra_tf.modeling.embeddings import ElectraEmbeddings
from electra_tf.modeling.encoder import ElectraEncoder
from electra_tf.modeling.pretraining_heads import DiscriminatorHead, GeneratorHead
from electra_tf.modeling.models import (ElectraDiscriminator, ElectraGenerator, PretrainingNetworks, TwoTowerGenerator,
                                        build_pretraining_networks)
from electra_tf.modeling.transformer import SelfAttention, TransformerLayer
