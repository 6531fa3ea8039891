"""get_<field>_display() of the shared model base answers as Django's own does."""
from catalog.models import HardwareSupport, Tool


def test_choice_labels_and_unknown_values_as_django_gives_them():
    tool = Tool(kind=Tool.Kind.PROVIDER)
    assert tool.get_kind_display() == dict(Tool.Kind.choices)[Tool.Kind.PROVIDER]

    tool.kind = "not-a-kind"
    assert tool.get_kind_display() == "not-a-kind"

    support = HardwareSupport(level=HardwareSupport.Level.PARTIAL)
    assert support.get_level_display() == dict(HardwareSupport.Level.choices)[HardwareSupport.Level.PARTIAL]
