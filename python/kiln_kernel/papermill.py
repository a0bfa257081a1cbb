"""papermill support: `papermill -k kiln IN OUT -p NAME VALUE`.

papermill imports every `papermill.engine` entry point when it is imported; the
kiln-kernel wheel declares one (`kiln = kiln_kernel.papermill:KilnEngine`), so
importing this module registers the translator that writes the injected-parameters
cell in Kiln's cell language (which reads Python literals: 42, 0.1, True, None,
'text', [1, 2], {'k': 1}). The engine itself is papermill's default (nbclient); it is
registered under the name "kiln" only because that is how papermill finds this module.
"""
from papermill.engines import NBClientEngine
from papermill.translators import PythonTranslator, Translator, papermill_translators


class KilnTranslator(PythonTranslator):
    """Python literals, one `name = value` line each, under a `# Parameters` comment
    (PythonTranslator would also run black over the cell, which Kiln does not need)."""

    @classmethod
    def codify(cls, parameters, comment="Parameters"):
        return Translator.codify.__func__(cls, parameters, comment)


class KilnEngine(NBClientEngine):
    """papermill's nbclient engine, unchanged (see the module's docstring)."""


papermill_translators.register("kiln", KilnTranslator)
