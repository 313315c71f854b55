/**
 * The nb2cwl icon: three steps of a workflow.
 */
import { LabIcon } from '@jupyterlab/ui-components';

const SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="2" y="2" width="8" height="6" rx="1.5"/>
    <rect x="14" y="9" width="8" height="6" rx="1.5"/>
    <rect x="2" y="16" width="8" height="6" rx="1.5"/>
    <path d="M10 5h3v6.5h1v1h-1V19h-3v-1.2h1.8v-5.3H14v-1h-1.2V6.2H10z"/>
  </g>
</svg>`;

export const nb2cwlIcon = new LabIcon({ name: 'nb2cwl:icon', svgstr: SVG });
