"""What each notebook shows of the lesson's library: its tables and figures, one call each.

The lesson's library (``course_utils/*.py``) holds the ideas; these modules hold how a notebook
shows them, so that a notebook's cell is one call and the library reads without them. They
import the library, never the other way round (``tests/test_architecture.py``):

- :mod:`course_utils.views.intro`: notebook 1's plots (what a final state remembers, one
  decoding step's energies beside its weights);
- :mod:`course_utils.views.attention_cost`: notebook 2's sections 5 to 7 (padding masks, the
  keys computed once, the cost of attention measured);
- :mod:`course_utils.views.reversal`: notebook 3's tables and figures of its reversal models;
- :mod:`course_utils.views.translation`: notebook 4's data, checkpoint bookkeeping, BLEU table
  and sentences side by side;
- :mod:`course_utils.views.heatmap_reading`: notebook 4's heatmap, chosen by a rule and read
  in words;
- :mod:`course_utils.views.long_inputs`: notebook 4's long inputs, test captions joined, and
  BLEU against source length over the whole range;
- :mod:`course_utils.views.scores`: notebook 6's Multi30k comparison, drawn as paired gains.
"""
