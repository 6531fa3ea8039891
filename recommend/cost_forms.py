"""The cost page's GET form: the same question and the same checks as /api/v1/cost/ (recommend.cost.cost_query)."""
from __future__ import annotations

from django import forms

from recommend.cost import cost_query
from recommend.wizard import DEFAULT_MODEL
from recommend.forms import DEFAULT_COST_HARDWARE
from scoring.errors import InputError


class CostForm(forms.Form):
    model = forms.ChoiceField(label="Model", choices=())
    hardware = forms.ChoiceField(label="Hardware", choices=())
    gpu_count = forms.IntegerField(label="GPUs (optional: every count the evidence has)", required=False,
                                   min_value=1, max_value=4096)
    gpu_hour_usd = forms.FloatField(
        label="Price of one GPU per hour (USD)", required=False, max_value=10_000,
        help_text="Left empty: the lowest sourced on-demand price for the hardware, named below.",
    )
    max_ttft_ms = forms.FloatField(label="Time to first token p50 at most (ms, optional)", required=False)
    min_tokens_per_user = forms.FloatField(label="Tokens/s per user at least (optional)", required=False)

    def __init__(self, data=None, *args, models=(), hardware=(), **kwargs):
        if data is not None:
            # A link naming only the model (a model page's) is answered for the default hardware, shown as chosen.
            data = data.copy()
            for name, default in (("model", DEFAULT_MODEL), ("hardware", DEFAULT_COST_HARDWARE)):
                if not data.get(name):
                    data[name] = default
        super().__init__(data, *args, **kwargs)
        self.fields["model"].choices = [(model.slug, model.name) for model in models]
        self.fields["hardware"].choices = [(spec.slug, spec.name) for spec in hardware]
        self.fields["model"].initial = DEFAULT_MODEL
        self.fields["hardware"].initial = DEFAULT_COST_HARDWARE
        self.query = None
        # Set when the only thing missing is a price the catalog has no source for: the page asks for it, as a
        # link from a page about that hardware deserves, rather than answering 400.
        self.price_needed = ""

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            self.query = cost_query(**{name: data.get(name) for name in self.fields})
        except InputError as exc:
            if set(exc.errors) == {"gpu_hour_usd"} and data.get("gpu_hour_usd") is None:
                self.price_needed = exc.errors["gpu_hour_usd"]
                return data
            for name, message in exc.errors.items():
                self.add_error(name if name in self.fields else None, message)
        return data
